import { expect } from 'chai';
import { pullsUnderWay, pullText } from '../../../src/cli/pull-lines';

describe('cli/pull-lines: pulls as a person reads them', () => {
  const now = Date.parse('2026-01-01T00:01:00.000Z');
  it('one image: pulling with bytes, queued, failed with its words, pulled with its digest', () => {
    expect(pullText({ pulling: { since: now - 3000, done: 5 * 1024 * 1024, total: 20 * 1024 * 1024 } }, now)).to.equal('pulling: 5 MiB of 20 MiB, for 3 s');
    expect(pullText({ queued: true }, now)).to.equal('waiting for a pull slot (--max-pulls)');
    expect(pullText({ failed: { kind: 'not-found', first: 'a', latest: 'not found: x', failures: 2, retryAt: now } }, now)).to.equal(
      'failed 2 times: not found: x',
    );
    expect(pullText({ pulled: { at: now, id: 'sha256:1', digest: 'sha256:d', for: [] } }, now)).to.equal('pulled 2026-01-01T00:01:00.000Z (sha256:d)');
    expect(pullText(undefined, now)).to.equal(undefined);
  });
  it('the progress line sums the pulls under way', () => {
    const m = new Map([
      ['a', { pulling: { since: now, done: 1024 * 1024, total: 4 * 1024 * 1024 } }],
      ['b', { pulling: { since: now, done: 1024 * 1024, total: 4 * 1024 * 1024 } }],
      ['c', { queued: true }],
    ]);
    expect(pullsUnderWay(m)).to.equal('pulling 2 images: 2 MiB of 8 MiB');
    expect(pullsUnderWay(new Map())).to.equal('');
  });
});
