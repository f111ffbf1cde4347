/** Reading a child's score from its results folder: numbers, true/false, {"score": n}, {"pass": ...}; links, fifos, big or bad files are errors, never 0. */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseScore, readScore } from '../../../src/harvest/score';

describe('harvest/score', () => {
  let dir: string;
  let outside: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-score-'));
    outside = mkdtempSync(path.join(os.tmpdir(), 'berth-score-out-'));
    writeFileSync(path.join(outside, 'secret.json'), '1');
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it('reads a number or {"score": n}, also in a sub-folder', async () => {
    writeFileSync(path.join(dir, 'score.txt'), ' 0.75\n');
    mkdirSync(path.join(dir, 'out'));
    writeFileSync(path.join(dir, 'out', 'score.json'), '{"score": 3, "detail": "x"}');
    expect(await readScore(dir, 'score.txt')).to.deep.equal({ score: 0.75 });
    expect(await readScore(dir, 'out/score.json')).to.deep.equal({ score: 3 });
    expect(await readScore(dir, './out/score.json')).to.deep.equal({ score: 3 });
  });

  it('reads true/false and {"pass": true|false|0|1} as a verdict (recorded as the score 1 or 0 too)', async () => {
    writeFileSync(path.join(dir, 'score.json'), '{"pass": 1, "detail": "x"}\n');
    expect(await readScore(dir, 'score.json')).to.deep.equal({ score: 1, pass: true });
    expect(parseScore('true')).to.deep.equal({ score: 1, pass: true });
    expect(parseScore(' false\n')).to.deep.equal({ score: 0, pass: false });
    expect(parseScore('{"pass": true}')).to.deep.equal({ score: 1, pass: true });
    expect(parseScore('{"pass": false}')).to.deep.equal({ score: 0, pass: false });
    expect(parseScore('{"pass": 0}')).to.deep.equal({ score: 0, pass: false });
    expect(parseScore('-2.5')).to.deep.equal({ score: -2.5 });
    expect(parseScore('{"score": 0}')).to.deep.equal({ score: 0 });
  });

  it('refuses every other shape, saying what a score file may hold', () => {
    const cases: [string, string][] = [
      ['{"pass": 2}', 'score: "pass" must be true, false, 1 or 0'],
      ['{"pass": "yes"}', 'score: "pass" must be true, false, 1 or 0'],
      ['{"pass": null}', 'score: "pass" must be true, false, 1 or 0'],
      ['{"pass": 0.5}', 'score: "pass" must be true, false, 1 or 0'],
      ['{"score": 1, "pass": true}', 'score: holds both "score" and "pass"; give one'],
      ['[1]', 'score: not a number, true/false, {"score": n} or {"pass": true|false|0|1}'],
      ['[true]', 'score: not a number, true/false, {"score": n} or {"pass": true|false|0|1}'],
      ['NaN', 'score: not a number, true/false, {"score": n} or {"pass": true|false|0|1}'],
      ['"1"', 'score: not a number, true/false, {"score": n} or {"pass": true|false|0|1}'],
      ['{"score": true}', 'score: not a number, true/false, {"score": n} or {"pass": true|false|0|1}'],
      ['1e999', 'score: not a finite number'],
    ];
    for (const [text, error] of cases) expect(parseScore(text), text).to.deep.equal({ error });
  });

  it('a missing, empty or unparsable score is an error, never 0', async () => {
    expect(await readScore(dir, 'score.json')).to.deep.equal({ error: 'score.json: not found' });
    expect(await readScore(dir, 'a/score.json')).to.deep.equal({ error: 'a/score.json: not found' });
    expect(await readScore(undefined, 'score.json')).to.deep.equal({ error: 'score.json: the run has no results folder' });
    for (const bad of ['', 'pass', '{"score": "1"}', '[1]', 'NaN', '{"points": 1}', 'null']) {
      expect(parseScore(bad), bad).to.have.property('error');
    }
  });

  it('never follows a link: neither the file nor a folder on the way', async () => {
    symlinkSync(path.join(outside, 'secret.json'), path.join(dir, 'score.json'));
    symlinkSync(outside, path.join(dir, 'out'));
    expect(await readScore(dir, 'score.json')).to.deep.equal({ error: 'score.json: is a link (not followed)' });
    expect(await readScore(dir, 'out/secret.json')).to.deep.equal({ error: 'out/secret.json: out is a link (not followed)' });
  });

  it('refuses a fifo without hanging, a folder, and a file over the size limit', async () => {
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    mkdirSync(path.join(dir, 'folder'));
    writeFileSync(path.join(dir, 'big'), `${'1'.repeat(5000)}`);
    expect(await readScore(dir, 'fifo')).to.deep.equal({ error: 'fifo: not a regular file' });
    expect(await readScore(dir, 'folder')).to.deep.equal({ error: 'folder: not a regular file' });
    expect(await readScore(dir, 'big')).to.deep.equal({ error: 'big: 5000 bytes, more than 4096' });
  });
});
