/** util/tree-walk.ts: one walk for fixtures, graders' fixtures and build contexts, no link followed. */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UnsafePathError } from '../../../src/util/no-follow';
import { walkTree } from '../../../src/util/tree-walk';

describe('util/tree-walk', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-walk-'));
    mkdirSync(path.join(dir, 't/b/c'), { recursive: true });
    writeFileSync(path.join(dir, 't/a.txt'), 'a');
    writeFileSync(path.join(dir, 't/b/c/d.txt'), 'd');
    symlinkSync('../a.txt', path.join(dir, 't/b/up'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const walk = async (root: string, o: { statBy?: 'path'; rel?: false } = {}) => {
    const seen: string[] = [];
    await walkTree<Stats>(root, o, (e) => {
      seen.push(`${e.depth} ${e.rel || '(root)'} ${e.st.isDirectory() ? 'dir' : e.st.isSymbolicLink() ? 'link' : 'file'}`);
    });
    return seen;
  };

  it('a folder, then its entries by name, depth first; links are entries, never followed', async () => {
    const want = ['0 (root) dir', '1 a.txt file', '1 b dir', '2 b/c dir', '3 b/c/d.txt file', '2 b/up link'];
    expect(await walk(path.join(dir, 't'))).to.deep.equal(want);
    expect(await walk(path.join(dir, 't'), { statBy: 'path' })).to.deep.equal(want);
  });

  it('a root that is a file is one entry named by its name', async () => {
    expect(await walk(path.join(dir, 't/a.txt'))).to.deep.equal(['0 a.txt file']);
  });

  it('a root reached through a link is refused; a root that is a link is an entry of its own', async () => {
    symlinkSync(path.join(dir, 't'), path.join(dir, 'via'));
    let err: unknown;
    await walk(path.join(dir, 'via', 'b')).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(UnsafePathError);
    expect(await walk(path.join(dir, 'via'))).to.deep.equal(['0 via link']);
  });

  it('a folder swapped for a link between its lstat and its opening is refused, not followed', async () => {
    mkdirSync(path.join(dir, 'elsewhere'));
    writeFileSync(path.join(dir, 'elsewhere/secret'), 's');
    let err: unknown;
    const seen: string[] = [];
    await walkTree<Stats>(path.join(dir, 't'), {}, (e) => {
      seen.push(e.rel);
      // `b` was lstat'ed a folder; before the walk opens it, it becomes a link to another folder
      if (e.rel === 'b') {
        renameSync(path.join(dir, 't/b'), path.join(dir, 'b-moved'));
        symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 't/b'));
      }
    }).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(UnsafePathError);
    expect(String(err)).to.contain('symbolic link');
    expect(seen.some((r) => r.includes('secret'))).to.equal(false);
  });
});
