import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pruneOldest } from '../../../src/util/prune-folder';

describe('util/prune-folder', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-prune-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Files a0..a(n-1), a0 the oldest. */
  const files = (n: number, prefix = 'a') => {
    for (let i = 0; i < n; i++) {
      const f = path.join(dir, `${prefix}${i}`);
      writeFileSync(f, '');
      const at = new Date(Date.now() - 3_600_000 + i * 1000);
      utimesSync(f, at, at);
    }
  };
  const left = () => readdirSync(dir).sort();

  it('keeps the max most recently written, and does nothing at or below it', () => {
    files(5);
    pruneOldest(dir, 5);
    expect(left()).to.have.length(5);
    pruneOldest(dir, 3);
    expect(left()).to.deep.equal(['a2', 'a3', 'a4']);
  });

  it('counts only the names that match, never removes `keep` (which counts among the max), and leaves a folder it cannot read', () => {
    files(4);
    files(3, 'other');
    pruneOldest(dir, 2, { match: /^a\d$/, keep: path.join(dir, 'a0') });
    expect(left()).to.deep.equal(['a0', 'a3', 'other0', 'other1', 'other2']);
    expect(() => pruneOldest(path.join(dir, 'none'), 1)).to.not.throw();
  });
});
