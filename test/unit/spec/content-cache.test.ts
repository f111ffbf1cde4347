/** Fixture digests kept by file identity and version (src/spec/content-cache.ts), on real files. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clearContentCache, contentCacheStats, fileSha256 } from '../../../src/spec/content-cache';
import { scanFixture } from '../../../src/spec/fixture-scan';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('fixture content cache', function () {
  let dir: string;
  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-content-cache-'));
    clearContentCache();
  });
  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('reads an unchanged file once, however often the fixture is scanned', async function () {
    await fs.writeFile(path.join(dir, 'a'), 'alpha');
    await fs.writeFile(path.join(dir, 'b'), 'beta');
    const first = await scanFixture(dir);
    const s0 = contentCacheStats();
    const again = await scanFixture(dir);
    const s1 = contentCacheStats();
    expect(again).to.deep.equal(first);
    expect([s1.hits - s0.hits, s1.misses - s0.misses]).to.deep.equal([2, 0]);
    expect(first.entries.find((e) => e.path === 'a')?.sha256).to.equal(sha('alpha'));
  });

  it('reads a file again when it was written, even with the same size and its mtime set back', async function () {
    const f = path.join(dir, 'a');
    await fs.writeFile(f, 'alpha');
    const st = await fs.stat(f);
    expect(await fileSha256(f)).to.equal(sha('alpha'));
    await fs.writeFile(f, 'omega');
    await fs.utimes(f, st.atime, st.mtime);
    expect(await fileSha256(f)).to.equal(sha('omega'));
  });

  it('a file replaced by another (a new inode) is read anew', async function () {
    const f = path.join(dir, 'a');
    await fs.writeFile(f, 'alpha');
    expect(await fileSha256(f)).to.equal(sha('alpha'));
    await fs.writeFile(path.join(dir, 'b'), 'gamma');
    await fs.rename(path.join(dir, 'b'), f);
    expect(await fileSha256(f)).to.equal(sha('gamma'));
  });
});
