/**
 * Fixture layers copied in (pack/archive.ts, fixture-layers.ts) and packed layers kept on disk
 * (pack/fixture-cache.ts): the later layer wins per path, each layer is packed once, a damaged
 * entry is found and packed again, the cache keeps to its bound (least recently used go first).
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { extract } from 'tar-stream';
import { fixtureTar, type FixtureCacheConfig } from '../../../src/pack/archive';
import { fixtureCacheStats, layerKey } from '../../../src/pack/fixture-cache';
import { keptEntries, mergedIndex, overlay } from '../../../src/pack/fixture-layers';
import { fixtureDigest } from '../../../src/spec/fixture-digest';
import { scanFixture } from '../../../src/spec/fixture-scan';
import type { FixtureLayer } from '../../../src/spec/types';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

/** What an archive extracts to: name → type (and mode, link target or sha256 of a file); fails on a file or link seen twice (a folder may be: its
 * later entry sets its mode). */
async function extracted(a: { body(): Buffer | NodeJS.ReadableStream; dispose(): Promise<void> }): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    ex.on('entry', (h, stream, next) => {
      if (out[h.name] !== undefined && h.type !== 'directory') reject(new Error(`${h.name} twice in the archive`));
      const hash = createHash('sha256');
      stream.on('data', (c: unknown) => hash.update(c as Buffer));
      stream.on('end', () => {
        out[h.name] =
          h.type === 'symlink' ? `symlink:${h.linkname}` : h.type === 'file' ? `file:${hash.digest('hex').slice(0, 8)}` : `${h.type}:${h.mode?.toString(8)}`;
        next();
      });
    });
    ex.on('finish', resolve);
    ex.on('error', reject);
  });
  const body = a.body();
  if (Buffer.isBuffer(body)) ex.end(body);
  else body.pipe(ex);
  await done;
  await a.dispose();
  return out;
}

describe('pack/fixture-layers and fixture-cache', () => {
  let root: string;
  let cache: FixtureCacheConfig;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'berth-layers-'));
    cache = { dir: path.join(root, 'state', 'cache', 'fixtures'), maxBytes: 64 * 1024 * 1024 };
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** A layer folder holding `files` (a value ending in '/' is a folder; 'link:x' a link to x). */
  async function layer(name: string, files: Record<string, string>): Promise<FixtureLayer> {
    const dir = path.join(root, name);
    mkdirSync(dir, { recursive: true });
    for (const [rel, v] of Object.entries(files)) {
      const abs = path.join(dir, rel);
      if (v === '/') mkdirSync(abs, { recursive: true });
      else {
        mkdirSync(path.dirname(abs), { recursive: true });
        if (v.startsWith('link:')) (await import('node:fs')).symlinkSync(v.slice(5), abs);
        else writeFileSync(abs, v);
      }
    }
    return { path: dir, digest: fixtureDigest((await scanFixture(dir)).entries) };
  }

  const entriesOnDisk = () => (existsSync(cache.dir) ? readdirSync(cache.dir).filter((n) => /^[0-9a-f]{64}$/.test(n)) : []);

  describe('overlay (pure)', () => {
    it('a later file puts away a folder and all below it; a later folder replaces a file; folders merge', () => {
      const m = new Map<string, { type: string; n: number }>([
        ['d', { type: 'dir', n: 0 }],
        ['d/x', { type: 'file', n: 0 }],
        ['d/sub', { type: 'dir', n: 0 }],
        ['d/sub/y', { type: 'file', n: 0 }],
        ['dx', { type: 'file', n: 0 }],
        ['f', { type: 'file', n: 0 }],
        ['keep', { type: 'dir', n: 0 }],
        ['keep/k', { type: 'file', n: 0 }],
      ]);
      overlay(m, [
        ['f/y', { type: 'file', n: 1 }],
        ['f', { type: 'dir', n: 1 }],
        ['d', { type: 'symlink', n: 1 }],
        ['keep', { type: 'dir', n: 1 }],
        ['keep/k2', { type: 'file', n: 1 }],
      ]);
      expect(Object.fromEntries([...m].map(([k, v]) => [k, `${v.type}${v.n}`]))).to.deep.equal({
        d: 'symlink1',
        dx: 'file0',
        f: 'dir1',
        'f/y': 'file1',
        keep: 'dir1',
        'keep/k': 'file0',
        'keep/k2': 'file1',
      });
    });

    it('keeps of each layer what the merged tree holds of it, and folders that stay folders', () => {
      const base = [
        { path: 'a', type: 'file' },
        { path: 'd', type: 'dir' },
        { path: 'd/x', type: 'file' },
        { path: 'f', type: 'file' },
        { path: 'k', type: 'dir' },
        { path: 'k/1', type: 'file' },
      ];
      const patch = [
        { path: 'a', type: 'file' },
        { path: 'd', type: 'file' },
        { path: 'f', type: 'dir' },
        { path: 'f/y', type: 'file' },
        { path: 'k', type: 'dir' },
      ];
      expect(keptEntries([base, patch])).to.deep.equal([
        [false, false, false, false, true, true],
        [true, true, true, true, true],
      ]);
      expect(mergedIndex([base, patch]).map((e) => `${e.path}:${e.type}:${e.layer}`)).to.deep.equal([
        'a:file:1',
        'd:file:1',
        'f:dir:1',
        'f/y:file:1',
        'k:dir:1',
        'k/1:file:0',
      ]);
    });
  });

  it('copies layers in order, the later winning per path (a type change included), each file once; the index is the merged tree with its layers', async () => {
    const base = await layer('base', { 'a.txt': 'base-a', 'keep.txt': 'keep', 'd/x': 'x', 'f.txt': 'file', link: 'link:a.txt', 'sub/': '/' });
    const patch = await layer('patch', { 'a.txt': 'patch-a', d: 'now a file', 'f.txt/inner': 'in', 'sub/new': 'n' });
    const a = await fixtureTar([base, patch], '/work/w', 0, 0, cache);
    const idx = a.index.map((e) => `${e.path}:${e.type}:${e.layer}`);
    expect(await extracted(a)).to.deep.equal({
      'work/': 'directory:755',
      'work/w/': 'directory:755',
      'work/w/a.txt': `file:${sha('patch-a').slice(0, 8)}`,
      'work/w/d': `file:${sha('now a file').slice(0, 8)}`,
      'work/w/f.txt/': 'directory:755',
      'work/w/f.txt/inner': `file:${sha('in').slice(0, 8)}`,
      'work/w/keep.txt': `file:${sha('keep').slice(0, 8)}`,
      'work/w/link': 'symlink:a.txt',
      'work/w/sub/': 'directory:755',
      'work/w/sub/new': `file:${sha('n').slice(0, 8)}`,
    });
    expect(idx).to.deep.equal([
      '.:dir:1',
      'a.txt:file:1',
      'd:file:1',
      'f.txt:dir:1',
      'f.txt/inner:file:1',
      'keep.txt:file:0',
      'link:symlink:0',
      'sub:dir:1',
      'sub/new:file:1',
    ]);
    // a single layer: its index is what the loader scans (the workspace export of a plain fixture is unchanged)
    const one = await fixtureTar([base], '/w', 0, 0, cache);
    expect(one.index).to.deep.equal((await scanFixture(base.path)).entries);
    await one.dispose();
  });

  it('names past the plain tar header (pax: long, non-ASCII, long link targets) are found in the packed layer and shadowed as any other', async () => {
    const long = `${'deep/'.repeat(30)}${'n'.repeat(120)}.txt`;
    const target = `${'../'.repeat(30)}${'t'.repeat(110)}`;
    const base = await layer('pax', { [long]: 'base long', 'ünïcødé.txt': 'base u', 'kept.txt': 'k', [`${'deep/'.repeat(30)}ln`]: `link:${target}` });
    const patch = await layer('pax2', { [long]: 'patch long', 'ünïcødé.txt': 'patch u' });
    const got = await extracted(await fixtureTar([base, patch], '/w', 0, 0, cache));
    expect(got[`w/${long}`]).to.equal(`file:${sha('patch long').slice(0, 8)}`);
    expect(got['w/ünïcødé.txt']).to.equal(`file:${sha('patch u').slice(0, 8)}`);
    expect(got['w/kept.txt']).to.equal(`file:${sha('k').slice(0, 8)}`);
    expect(got[`w/${'deep/'.repeat(30)}ln`]).to.equal(`symlink:${target}`);
  });

  it('a single-file layer lands at its name, over a folder layer', async () => {
    const base = await layer('base2', { 'cfg.json': '{}', 'x/y': 'y' });
    mkdirSync(path.join(root, 'one'));
    writeFileSync(path.join(root, 'one', 'cfg.json'), '{"a":1}');
    const file = { path: path.join(root, 'one', 'cfg.json'), digest: fixtureDigest((await scanFixture(path.join(root, 'one', 'cfg.json'))).entries) };
    expect(await extracted(await fixtureTar([base, file], '/w', 0, 0, cache))).to.deep.equal({
      'w/': 'directory:755',
      'w/cfg.json': `file:${sha('{"a":1}').slice(0, 8)}`,
      'w/x/': 'directory:755',
      'w/x/y': `file:${sha('y').slice(0, 8)}`,
    });
  });

  it('packs a layer once for every copy that uses it, at once or later; another owner or working dir is another entry', async () => {
    const base = await layer('shared', { 'big.bin': 'b'.repeat(300_000), 'src/m.py': 'print(1)' });
    const patches = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => layer(`p${i}`, { 'task.txt': `task ${i}` })));
    const before = fixtureCacheStats().packs;
    // six copies at once, each its own patch over the shared base
    const all = await Promise.all(patches.map((p) => fixtureTar([base, p], '/w', 0, 0, cache)));
    expect(fixtureCacheStats().packs - before, 'the base once, each patch once').to.equal(7);
    for (const [i, a] of all.entries()) expect((await extracted(a))['w/task.txt']).to.equal(`file:${sha(`task ${i}`).slice(0, 8)}`);
    expect(entriesOnDisk()).to.have.length(7);
    await (await fixtureTar([base, patches[0] as FixtureLayer], '/w', 0, 0, cache)).dispose();
    expect(fixtureCacheStats().packs - before, 'nothing packed again').to.equal(7);
    await (await fixtureTar([base], '/w', 1000, 1000, cache)).dispose();
    await (await fixtureTar([base], '/other', 0, 0, cache)).dispose();
    expect(fixtureCacheStats().packs - before).to.equal(9);
  });

  it('finds a damaged entry (truncated, garbage of the same size, a meta.json that does not parse, its archive gone, a file in its place, removed), packs it again and never copies it in', async () => {
    const base = await layer('dmg', { 'a.txt': 'a'.repeat(5000), 'b.txt': 'b' });
    const want = await extracted(await fixtureTar([base], '/w', 0, 0, cache));
    const at = path.join(cache.dir, layerKey(base.digest, '/w', 0, 0));
    const tar = path.join(at, 'archive.tar');
    const damage: [string, () => void][] = [
      ['truncated', () => truncateSync(tar, 1024)],
      ['garbage', () => writeFileSync(tar, Buffer.alloc(statSync(tar).size, 0x41))],
      ['meta', () => writeFileSync(path.join(at, 'meta.json'), '{"version": 1, "ke')],
      ['archive gone', () => rmSync(tar)],
      ['a file in its place', () => (rmSync(at, { recursive: true }), writeFileSync(at, 'x'))],
      ['removed', () => rmSync(at, { recursive: true })],
    ];
    for (const [what, harm] of damage) {
      harm();
      const s = fixtureCacheStats();
      expect(await extracted(await fixtureTar([base], '/w', 0, 0, cache)), what).to.deep.equal(want);
      const t = fixtureCacheStats();
      expect([t.packs - s.packs, t.damaged - s.damaged], what).to.deep.equal([1, what === 'removed' ? 0 : 1]);
      expect(existsSync(tar), what).to.equal(true);
    }
  });

  it('keeps only a layer whose files have the digest the spec names, and only what fits the bound', async () => {
    const base = await layer('edited', { 'a.txt': 'one' });
    const wrong = { ...base, digest: 'f'.repeat(64) };
    const s = fixtureCacheStats().packs;
    await (await fixtureTar([wrong], '/w', 0, 0, cache)).dispose();
    await (await fixtureTar([wrong], '/w', 0, 0, cache)).dispose();
    expect(fixtureCacheStats().packs - s, 'packed each time').to.equal(2);
    expect(entriesOnDisk()).to.deep.equal([]);
    const small = { ...cache, maxBytes: 100 };
    await (await fixtureTar([base], '/w', 0, 0, small)).dispose();
    expect(entriesOnDisk(), 'larger than the bound: not kept').to.deep.equal([]);
    const none = { ...cache, maxBytes: 0 };
    await (await fixtureTar([base], '/w', 0, 0, none)).dispose();
    expect(entriesOnDisk(), '0: nothing kept').to.deep.equal([]);
    expect(
      readdirSync(cache.dir).filter((n) => n.startsWith('.tmp-')),
      'no temp folder left',
    ).to.deep.equal([]);
  });

  it('keeps to its bound, the least recently used removed first', async () => {
    const [a, b, c] = await Promise.all(['la', 'lb', 'lc'].map((n) => layer(n, { 'data.bin': n.repeat(5000) })));
    const bounded = { ...cache, maxBytes: 25_000 }; // two layers of ~11 KB
    const key = (l: FixtureLayer) => layerKey(l.digest, '/w', 0, 0);
    await (await fixtureTar([a as FixtureLayer], '/w', 0, 0, bounded)).dispose();
    await (await fixtureTar([b as FixtureLayer], '/w', 0, 0, bounded)).dispose();
    expect(entriesOnDisk().sort()).to.deep.equal([key(a as FixtureLayer), key(b as FixtureLayer)].sort());
    // b used long ago, a just now
    utimesSync(path.join(cache.dir, key(b as FixtureLayer)), new Date(1000), new Date(1000));
    utimesSync(path.join(cache.dir, key(a as FixtureLayer)), new Date(2000), new Date(2000));
    await (await fixtureTar([a as FixtureLayer], '/w', 0, 0, bounded)).dispose();
    await (await fixtureTar([c as FixtureLayer], '/w', 0, 0, bounded)).dispose();
    expect(entriesOnDisk().sort()).to.deep.equal([key(a as FixtureLayer), key(c as FixtureLayer)].sort());
  });

  it('an entry removed while a copy streams from it: the copy finishes', async () => {
    const base = await layer('busy', { 'big.bin': 'z'.repeat(3 * 1024 * 1024) });
    await (await fixtureTar([base], '/w', 0, 0, cache)).dispose();
    const a = await fixtureTar([base], '/w', 0, 0, cache);
    rmSync(path.join(cache.dir, layerKey(base.digest, '/w', 0, 0)), { recursive: true });
    expect((await extracted(a))['w/big.bin']).to.equal(`file:${sha('z'.repeat(3 * 1024 * 1024)).slice(0, 8)}`);
  });
});
