/**
 * The spec cache on disk (between processes): an unchanged file is served from it, also checked
 * out again; a changed file never is (whatever its size and mtime say); a damaged cache is ignored and replaced; a results
 * folder that became a link out is checked again; a file is kept by the bytes it was read from.
 * Each process is stood for by clearing the in-memory cache between loads.
 */
import { expect } from 'chai';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { clearSpecFileCache } from '../../../src/spec/file-cache';
import { loadSpecs } from '../../../src/spec/loader';
import { cleanupTemp, doc, tempDir, writeTree } from './helpers';

/** A specs folder, results root and state folder; the spec file's times put an hour back (not "racy"). */
function setup(files: Record<string, string>) {
  const root = tempDir();
  const specs = path.join(root, 'specs');
  const results = path.join(root, 'results');
  const state = path.join(root, 'state');
  mkdirSync(specs);
  mkdirSync(state);
  writeTree(specs, files);
  const old = (f: string) => utimesSync(path.join(specs, f), new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
  for (const f of Object.keys(files)) old(f);
  const cacheFile = () => {
    const dir = path.join(state, 'cache');
    const names = existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith('.json')) : [];
    return names.length === 1 ? path.join(dir, names[0] as string) : undefined;
  };
  /** A new process: nothing kept in memory. */
  const load = () => {
    clearSpecFileCache();
    return loadSpecs({ specsDir: specs, resultsRoot: results, cacheIn: state });
  };
  /** Rewrites every image the cache holds: what a load then shows came from the cache. */
  const mark = (image: string) => {
    const f = cacheFile();
    if (!f) return;
    writeFileSync(f, readFileSync(f, 'utf8').replaceAll('"image":"berth/busybox:local"', `"image":"${image}"`));
  };
  return { specs, results, state, load, cacheFile, mark, old };
}

describe('spec/disk-cache', () => {
  afterEach(() => {
    clearSpecFileCache();
    cleanupTemp();
  });

  it('serves an unchanged file from the cache a process before wrote (mode 0600)', async () => {
    const s = setup({ 'a.yaml': doc('a', '  command: [echo, one]\n') });
    const first = await s.load();
    expect(first.errors).to.deep.equal([]);
    const file = s.cacheFile();
    expect(file, 'cache file written').to.not.equal(undefined);
    expect(statSync(file as string).mode & 0o777).to.equal(0o600);
    s.mark('from-the-cache');
    const second = await s.load();
    expect(second.specs[0]?.spec.image).to.equal('from-the-cache');
    expect(second.specs[0]?.hash).to.equal(first.specs[0]?.hash);
  });

  it('serves a file checked out again with the same bytes (new inode and times), as CI with the state folder kept', async () => {
    const s = setup({ 'a.yaml': doc('a', '  command: [echo, one]\n') });
    await s.load();
    s.mark('from-the-cache');
    const f = path.join(s.specs, 'a.yaml');
    const text = readFileSync(f);
    rmSync(f);
    writeFileSync(f, text);
    expect((await s.load()).specs[0]?.spec.image).to.equal('from-the-cache');
  });

  it('never serves a changed file, even of the same size with its mtime put back', async () => {
    const s = setup({ 'a.yaml': doc('a', '  command: [echo, one]\n') });
    await s.load();
    s.mark('stale');
    const f = path.join(s.specs, 'a.yaml');
    const before = statSync(f);
    writeFileSync(f, doc('a', '  command: [echo, two]\n'));
    utimesSync(f, before.atime, before.mtime); // size and mtime as before; ctime moves
    expect(statSync(f).size).to.equal(before.size);
    const r = await s.load();
    expect(r.specs[0]?.spec.command).to.deep.equal(['echo', 'two']);
    expect(r.specs[0]?.spec.image).to.equal('berth/busybox:local');
  });

  it('ignores a damaged cache (not JSON, wrong shape, another build) and writes a good one', async () => {
    const s = setup({ 'a.yaml': doc('a') });
    const want = (await s.load()).specs[0]?.hash;
    const file = s.cacheFile() as string;
    for (const bad of ['{"format":1,"build":', '[]', 'null', '{"format":1,"build":"another","entries":{}}', '{"format":1,"entries":{"x":{"sig":1}}}']) {
      writeFileSync(file, bad);
      const r = await s.load();
      expect(r.errors, bad).to.deep.equal([]);
      expect(r.specs[0]?.hash, bad).to.equal(want);
    }
    const good = JSON.parse(readFileSync(file, 'utf8')) as { entries: Record<string, unknown> };
    expect(Object.keys(good.entries)).to.have.length(1);
  });

  it('checks results folders again: one that became a link out of the results root is an error, not a cache hit', async () => {
    const s = setup({ 'a.yaml': doc('a') });
    mkdirSync(s.results);
    expect((await s.load()).errors).to.deep.equal([]);
    symlinkSync(tempDir(), path.join(s.results, 'a'));
    const r = await s.load();
    expect(r.errors.map((e) => e.code)).to.deep.equal(['path-escape']);
    expect(r.specs).to.deep.equal([]);
  });

  it('keeps a file written just now by the bytes it read, so an edit right after (same size, same times) is still seen; never writes a state folder that is not there', async () => {
    const s = setup({ 'a.yaml': doc('a') });
    const f = path.join(s.specs, 'a.yaml');
    writeFileSync(f, doc('a', '  command: [echo, one]\n'));
    const before = statSync(f);
    await s.load();
    s.mark('stale');
    writeFileSync(f, doc('a', '  command: [echo, two]\n'));
    utimesSync(f, before.atime, before.mtime);
    const r = await s.load();
    expect(r.specs[0]?.spec.command).to.deep.equal(['echo', 'two']);
    expect(r.specs[0]?.spec.image).to.equal('berth/busybox:local');
    const root = tempDir();
    writeTree(path.join(root, 'specs'), { 'a.yaml': doc('a') });
    clearSpecFileCache();
    await loadSpecs({ specsDir: path.join(root, 'specs'), resultsRoot: path.join(root, 'results'), cacheIn: path.join(root, 'no-state') });
    expect(existsSync(path.join(root, 'no-state'))).to.equal(false);
  });
});
