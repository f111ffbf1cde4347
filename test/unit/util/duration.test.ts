/** One duration syntax for every flag (CONTRACT v3: every duration flag takes units; a plain number is seconds). */
import { expect } from 'chai';
import { formatDuration, parseDuration } from '../../../src/util/duration';

describe('parseDuration', () => {
  it('reads ms, s, m and h, fractions, and a bare number as seconds', () => {
    const cases: [string, number][] = [
      ['500ms', 500],
      ['30s', 30_000],
      ['2m', 120_000],
      ['1h', 3_600_000],
      ['1.5h', 5_400_000],
      ['30', 30_000],
      ['0.25', 250],
      [' 45s ', 45_000],
      ['30 s', 30_000],
    ];
    for (const [text, ms] of cases) expect(parseDuration(text), text).to.equal(ms);
  });

  it('adds units joined as Go writes them', () => {
    expect(parseDuration('1h30m')).to.equal(5_400_000);
    expect(parseDuration('2m30s')).to.equal(150_000);
    expect(parseDuration('1s500ms')).to.equal(1500);
  });

  it('refuses what is not a duration, and zero unless asked for', () => {
    for (const bad of ['', 'soon', '-1s', '5 minutes', '10d', '1h 30x', 's', '1e3', '30sec', 'm5', '0', '0s', '0ms'])
      expect(parseDuration(bad), bad).to.equal(undefined);
    expect(parseDuration('0', { zero: true })).to.equal(0);
    expect(parseDuration('0s', { zero: true })).to.equal(0);
    expect(parseDuration('-1', { zero: true })).to.equal(undefined);
  });

  it('prints durations back in the same syntax', () => {
    expect([500, 30_000, 120_000, 5_400_000, 1500, 3_600_000].map((ms) => formatDuration(ms))).to.deep.equal(['500ms', '30s', '2m', '1h30m', '1.5s', '1h']);
    for (const ms of [500, 30_000, 5_400_000, 1500, 90_061_000]) expect(parseDuration(formatDuration(ms))).to.equal(ms);
  });
});
