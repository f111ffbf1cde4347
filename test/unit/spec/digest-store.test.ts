/**
 * Fixture digests kept on disk (src/spec/digest-store.ts): a second process reads no file of an
 * unchanged fixture; a changed file is read again; a damaged cache is ignored and rebuilt; a
 * fixture file too large to copy (a 16 TiB sparse file) is refused from its stat, in well under
 * a second.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runValidate } from '../../../src/cli/commands/validate';
import { clearContentCache, contentCacheStats } from '../../../src/spec/content-cache';
import { cacheDir, digestStoreStats } from '../../../src/spec/digest-store';
import { fixtureDigest } from '../../../src/spec/fixture-digest';
import { clearTreeDigests, knownFixtureDigest, scanFixture } from '../../../src/spec/fixture-scan';
import { cleanupTemp, doc, REPO, sandbox, tempDir, writeTree } from './helpers';

/** Scans `fixture` in a new process with the cache in `cache`: its digest entries and how many files it read. */
function scanInChild(fixture: string, cache: string): { reads: number; entries: unknown } {
  const script = `
    const { scanFixture } = require(${JSON.stringify(path.join(REPO, 'src/spec/fixture-scan.ts'))});
    const { contentCacheStats } = require(${JSON.stringify(path.join(REPO, 'src/spec/content-cache.ts'))});
    scanFixture(${JSON.stringify(fixture)}).then((s) => process.stdout.write(JSON.stringify({ reads: contentCacheStats().misses, entries: s.entries })));
  `;
  const out = execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: REPO, env: { ...process.env, BERTH_CACHE_DIR: cache } });
  return JSON.parse(out.toString()) as { reads: number; entries: unknown };
}

describe('fixture digests kept on disk between processes', function () {
  this.timeout(60_000);
  const saved = process.env.BERTH_CACHE_DIR;
  let cache: string;
  beforeEach(() => {
    cache = path.join(tempDir('berth-digest-cache-'), 'cache');
    process.env.BERTH_CACHE_DIR = cache;
    clearContentCache();
    clearTreeDigests();
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.BERTH_CACHE_DIR;
    else process.env.BERTH_CACHE_DIR = saved;
    cleanupTemp();
  });

  it('a second process reads no file of an unchanged fixture, and finds the same digest', () => {
    const dir = tempDir('berth-fixture-');
    const files: Record<string, string> = {};
    for (let i = 0; i < 40; i++) files[`d${i % 4}/f${i}.txt`] = `content ${i}\n`;
    writeTree(dir, files);
    const first = scanInChild(dir, cache);
    expect(first.reads).to.equal(40);
    const second = scanInChild(dir, cache);
    expect(second.reads).to.equal(0);
    expect(second.entries).to.deep.equal(first.entries);
    // A file written since is read again (and only it), in the next process too.
    writeFileSync(path.join(dir, 'd1', 'f1.txt'), 'changed\n');
    const third = scanInChild(dir, cache);
    expect(third.reads).to.equal(1);
    expect(third.entries).not.to.deep.equal(first.entries);
    expect(scanInChild(dir, cache).reads).to.equal(0);
  });

  it('is kept under BERTH_CACHE_DIR, 0600 in a 0700 folder; empty BERTH_CACHE_DIR keeps nothing', async () => {
    expect(cacheDir({ BERTH_CACHE_DIR: '' })).to.equal(undefined);
    expect(cacheDir({ XDG_CACHE_HOME: '/x/c' })).to.equal('/x/c/berth');
    const dir = tempDir('berth-fixture-');
    writeTree(dir, { a: 'a' });
    await scanFixture(dir);
    const kept = path.join(cache, 'fixture-digests');
    const names = readdirSync(kept);
    expect(names).to.have.length(1);
    const { statSync } = await import('node:fs');
    expect(statSync(kept).mode & 0o777).to.equal(0o700);
    expect(statSync(path.join(kept, names[0] as string)).mode & 0o777).to.equal(0o600);
  });

  it('a damaged cache file is ignored (the files are read) and rebuilt', async () => {
    const dir = tempDir('berth-fixture-');
    writeTree(dir, { a: 'alpha', b: 'beta' });
    const first = await scanFixture(dir);
    const kept = path.join(cache, 'fixture-digests');
    const file = path.join(kept, readdirSync(kept)[0] as string);
    for (const damage of ['{"format":1,"root":', '[]', JSON.stringify({ format: 1, root: dir, entries: { a: ['x', 'not a sha'] } })]) {
      writeFileSync(file, damage);
      clearContentCache();
      const reads = contentCacheStats().misses;
      const ignored = digestStoreStats().ignored;
      const again = await scanFixture(dir);
      expect(again).to.deep.equal(first);
      expect(contentCacheStats().misses - reads).to.be.greaterThan(0);
      if (damage !== '[]' && !damage.includes('not a sha')) expect(digestStoreStats().ignored).to.equal(ignored + 1);
      // rebuilt: whole and usable
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as { entries: Record<string, unknown> };
      expect(Object.keys(parsed.entries).sort()).to.deep.equal(['a', 'b']);
    }
    // A digest that lies is never used for a file whose identity differs: writing changes the ctime.
    writeFileSync(path.join(dir, 'a'), 'ALPHA');
    clearContentCache();
    const again = await scanFixture(dir);
    expect(again.entries.find((e) => e.path === 'a')?.sha256).not.to.equal(first.entries.find((e) => e.path === 'a')?.sha256);
  });

  it('an unchanged tree is known from a stat walk (its fingerprint); a changed or damaged one is scanned', async () => {
    const dir = tempDir('berth-fixture-');
    writeTree(dir, { 'a/b': 'beta', c: 'gamma' });
    expect(await knownFixtureDigest(dir)).to.equal(undefined); // never scanned whole
    const scan = await scanFixture(dir, fixtureDigest);
    expect(scan.digest).to.equal(fixtureDigest(scan.entries));
    clearTreeDigests(); // a new process: from disk
    expect(await knownFixtureDigest(dir)).to.equal(scan.digest);
    writeFileSync(path.join(dir, 'c'), 'GAMMA');
    expect(await knownFixtureDigest(dir)).to.equal(undefined);
    const again = await scanFixture(dir, fixtureDigest);
    expect(again.digest).not.to.equal(scan.digest);
    clearTreeDigests();
    const kept = path.join(cache, 'fixture-digests');
    const tree = readdirSync(kept).find((n) => n.endsWith('.tree')) as string;
    writeFileSync(path.join(kept, tree), '{"format":1,');
    expect(await knownFixtureDigest(dir)).to.equal(undefined);
    // a tree with a problem is never kept
    const bad = tempDir('berth-fixture-');
    writeTree(bad, { a: 'a' });
    const { symlinkSync } = await import('node:fs');
    symlinkSync('/etc/passwd', path.join(bad, 'out'));
    expect((await scanFixture(bad, fixtureDigest)).digest).to.equal(undefined);
    expect(await knownFixtureDigest(bad)).to.equal(undefined);
  });

  it('a fixture holding a 16 TiB sparse file validates in under a second, refused by name', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./repo\n'), 'repo/README.md': 'x' });
    const big = path.join(sb.specs, 'repo', 'disk.img');
    writeFileSync(big, '');
    try {
      truncateSync(big, 16 * 2 ** 40);
    } catch (err) {
      // ext4 with 4 KiB blocks stops one block short of 16 TiB
      if ((err as NodeJS.ErrnoException).code !== 'EFBIG') throw err;
      truncateSync(big, 16 * 2 ** 40 - 4096);
    }
    mkdirSync(path.join(sb.specs, 'repo', 'sub'));
    const out: string[] = [];
    const io = { out: (s: string) => out.push(s), err: (s: string) => out.push(s) };
    // The loader's own first use (the schema compiled, modules loaded) is not the fixture's cost.
    const warm = sandbox({ 'w.yaml': doc('w') });
    await runValidate([warm.specs], { output: 'text', resultsRoot: warm.results }, { out: () => undefined, err: () => undefined });
    const reads = contentCacheStats().misses;
    const t0 = performance.now();
    const code = await runValidate([sb.specs], { output: 'text', resultsRoot: sb.results }, io);
    const ms = performance.now() - t0;
    expect(code).to.equal(2);
    expect(out.join('')).to.match(
      /fixture file "disk\.img" is 16\.0 TiB \(0 bytes of it on disk: a sparse file[^)]*\); a fixture file may be at most 8 GiB \[too-large\]/,
    );
    expect(contentCacheStats().misses - reads).to.equal(1); // README.md; never the big one
    if (process.env.BERTH_TEST_VERBOSE) console.log(`validate took ${ms.toFixed(1)} ms`);
  });
});
