/**
 * The spec cache on disk (between processes): an unchanged file is served from it, also checked
 * out again; a changed file never is (whatever its size and mtime say); a damaged cache is ignored and replaced; a results
 * folder that became a link out is checked again; a file is kept by the bytes it was read from.
 * Each process is stood for by clearing the in-memory cache between loads.
 */
import { expect } from 'chai';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MAX_CACHE_FILES, RACY_MS } from '../../../src/spec/disk-cache';
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
    for (const bad of [
      '{"format":1,"build":',
      '[]',
      'null',
      '{"format":1,"build":"another","entries":{}}',
      '{"format":1,"entries":{"x":{"sig":1}}}',
      '{"format":2,"build":"another","entries":{"x":'.padEnd(400, ' '),
      // format 2: one line of all the entries (not read past its head)
      `{"format":2,"build":"another","entries":{${'"x":{},'.repeat(200_000)}"y":{}}}`,
      `{"format":3,"build":"another","entries":{${' '.repeat(600)}\n}}`,
    ]) {
      writeFileSync(file, bad);
      const r = await s.load();
      expect(r.errors, bad.slice(0, 60)).to.deep.equal([]);
      expect(r.specs[0]?.hash, bad.slice(0, 60)).to.equal(want);
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

describe('spec/disk-cache: bounded', () => {
  afterEach(() => {
    clearSpecFileCache();
    cleanupTemp();
  });

  it(`keeps at most ${MAX_CACHE_FILES} cache files in a folder: a write removes the least recently written`, async () => {
    const s = setup({ 'a.yaml': doc('a') });
    const dir = path.join(s.state, 'cache');
    mkdirSync(dir);
    const others = Array.from({ length: MAX_CACHE_FILES + 5 }, (_, i) => path.join(dir, `specs-${i.toString(16).padStart(16, '0')}.json`));
    others.forEach((f, i) => {
      writeFileSync(f, '{}');
      utimesSync(f, new Date(Date.now() - 7200_000 + i * 1000), new Date(Date.now() - 7200_000 + i * 1000));
    });
    writeFileSync(path.join(dir, 'not-a-cache.json'), '{}');
    await s.load();
    const left = readdirSync(dir).filter((n) => /^specs-[0-9a-f]{16}\.json$/.test(n));
    expect(left).to.have.length(MAX_CACHE_FILES);
    expect(existsSync(path.join(dir, 'not-a-cache.json')), 'a file of another name stays').to.equal(true);
    // the oldest went, the newest and the one just written stayed
    expect(existsSync(others[0] as string)).to.equal(false);
    expect(existsSync(others[5] as string)).to.equal(false);
    expect(existsSync(others[6] as string)).to.equal(true);
    expect(existsSync(others[others.length - 1] as string)).to.equal(true);
    expect((await s.load()).specs.map((x) => x.spec.name)).to.deep.equal(['a']);
  });
});

describe('spec/disk-cache: signatures and the file read piece by piece', () => {
  afterEach(() => {
    clearSpecFileCache();
    cleanupTemp();
  });

  /** The cache's text with every entry's content hash made wrong: only an entry served by its signature still answers. */
  const pastRacy = () => new Promise((r) => setTimeout(r, RACY_MS + 100));
  const wrongContent = (t: string) => t.replace(/"content":"[0-9a-f]{64}"/g, `"content":"${'0'.repeat(64)}"`);

  it('serves a file whose signature is the one kept without reading it (its kept hash is not looked at)', async () => {
    const s = setup({ 'a.yaml': doc('a', '  command: [echo, one]\n') });
    await pastRacy(); // its ctime (now: utimes sets it) far enough back
    await s.load();
    const file = s.cacheFile() as string;
    expect(readFileSync(file, 'utf8')).to.match(/"sig":"\d+:\d+:\d+:\d+:\d+"/);
    s.mark('from-the-cache');
    writeFileSync(file, wrongContent(readFileSync(file, 'utf8')));
    expect((await s.load()).specs[0]?.spec.image).to.equal('from-the-cache');
  });

  it('keeps no signature for a file changed just before it was read: it is hashed at every look (the test can fail)', async () => {
    const s = setup({ 'a.yaml': doc('a', '  command: [echo, one]\n') });
    writeFileSync(path.join(s.specs, 'a.yaml'), doc('a', '  command: [echo, two]\n')); // now: racy
    await s.load();
    const file = s.cacheFile() as string;
    expect(readFileSync(file, 'utf8')).to.not.include('"sig"');
    s.mark('from-the-cache');
    expect((await s.load()).specs[0]?.spec.image, 'served by its hash').to.equal('from-the-cache');
    writeFileSync(file, wrongContent(readFileSync(file, 'utf8')));
    const r = await s.load();
    expect(r.specs[0]?.spec.image).to.equal('berth/busybox:local');
    expect(r.specs[0]?.spec.command).to.deep.equal(['echo', 'two']);
  });

  it('a file written again with the same bytes is served by its hash and its new signature kept; a changed one of the same size and mtime never is', async () => {
    const s = setup({ 'a.yaml': doc('a', '  command: [echo, one]\n') });
    await pastRacy();
    await s.load();
    const f = path.join(s.specs, 'a.yaml');
    const sigOf = () => /"sig":"([^"]+)"/.exec(readFileSync(s.cacheFile() as string, 'utf8'))?.[1];
    const before = sigOf();
    const text = readFileSync(f);
    rmSync(f);
    writeFileSync(f, text);
    s.old('a.yaml'); // times an hour back; the ctime is now
    s.mark('from-the-cache');
    expect((await s.load()).specs[0]?.spec.image).to.equal('from-the-cache');
    // kept only once the ctime is far enough before the read: not yet (written just now)
    expect(sigOf()).to.equal(undefined);
    expect(before).to.not.equal(undefined);
    await pastRacy();
    expect((await s.load()).specs[0]?.spec.image).to.equal('from-the-cache');
    const after = sigOf();
    expect(after).to.not.equal(undefined);
    expect(after).to.not.equal(before);
    // same size, mtime put back: the ctime moves, the signature differs, the hash tells
    const st = statSync(f);
    writeFileSync(f, doc('a', '  command: [echo, two]\n'));
    utimesSync(f, st.atime, st.mtime);
    const r = await s.load();
    expect(r.specs[0]?.spec.command).to.deep.equal(['echo', 'two']);
    expect(r.specs[0]?.spec.image).to.equal('berth/busybox:local');
  });

  it('reads an entry longer than its piece of the file, and ignores a cache cut short or with a line that is not an entry', async () => {
    const s = setup({ 'a.yaml': doc('a', '  command: [echo, one]\n'), 'b.yaml': doc('b') });
    const want = (await s.load()).specs.map((x) => x.hash);
    const file = s.cacheFile() as string;
    s.mark('from-the-cache');
    const good = readFileSync(file, 'utf8');
    expect(good.split('\n')).to.have.length(4); // head, two entries, the closing line
    writeFileSync(file, good.replace('"content":', `"pad":"${'x'.repeat(3 << 20)}","content":`));
    expect((await s.load()).specs.map((x) => x.spec.image)).to.deep.equal(['from-the-cache', 'from-the-cache']);
    const lines = good.split('\n');
    for (const [what, bad] of [
      ['cut short', lines.slice(0, 3).join('\n')],
      ['cut inside an entry', good.slice(0, good.length - 40)],
      ['a line that is not an entry', [lines[0], lines[1], 'nope', ...lines.slice(2)].join('\n')],
      ['text after the closing line', `${good}\n,"x":{}`],
    ] as const) {
      writeFileSync(file, bad);
      const r = await s.load();
      expect(
        r.specs.map((x) => x.hash),
        what,
      ).to.deep.equal(want);
      expect(
        r.specs.map((x) => x.spec.image),
        what,
      ).to.deep.equal(['berth/busybox:local', 'berth/busybox:local']);
      s.mark('from-the-cache'); // the cache written again: marked for the next case
    }
  });
});

describe('spec/disk-cache: AttemptSets kept as their shape', () => {
  afterEach(() => {
    clearSpecFileCache();
    cleanupTemp();
  });

  const setFile = (command: string, axis = '{range: [0, 12]}') => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: big, labels: {team: x}}
spec:
  matrix:
    a: ${axis}
    b: [p, q, r, s, t, u, v, w, x, y, z, Zed]
  template:
    image: berth/busybox:local
    command: ${command}
    env: {B: '\${{ matrix.b }}'}
`;
  const CMD = "[sh, -c, 'echo ${{ matrix.a }} ${{ matrix.b }}']";
  const comparable = (r: Awaited<ReturnType<typeof loadSpecs>>) => ({
    specs: r.specs,
    errors: r.errors,
    protectedNames: [...r.protectedNames],
    sets: [...(r.sets ?? new Map())],
  });

  it('keeps the set as its template and coordinates, not one spec per child, and makes the same children from it', async () => {
    const s = setup({ 'set.yaml': setFile(CMD) });
    const first = await s.load();
    expect(first.errors).to.deep.equal([]);
    expect(first.specs).to.have.length(144);
    const size = statSync(s.cacheFile() as string).size;
    // One normalized spec is ~600 bytes; 144 of them would be ~90 KB.
    expect(size).to.be.below(8_000);
    const second = await s.load();
    expect(comparable(second)).to.deep.equal(comparable(first));
    // What a load shows came from the cache (the set's own settings are outside the children's specs).
    const file = s.cacheFile() as string;
    writeFileSync(file, readFileSync(file, 'utf8').replace('"maxParallel":null', '"maxParallel":77'));
    const third = await s.load();
    expect(third.sets?.get('big')?.policy.maxParallel).to.equal(77);
    expect(new Set(third.specs.map((x) => x.set?.set.maxParallel))).to.deep.equal(new Set([77]));
    // A child's spec changed in the cache no longer matches its shape: the file is loaded again.
    s.mark('from-the-cache');
    expect(comparable(await s.load())).to.deep.equal(comparable(first));
  });

  it('never serves a changed template: the children are made from the file as it is', async () => {
    const s = setup({ 'set.yaml': setFile(CMD) });
    const first = await s.load();
    s.mark('stale');
    // Same size, mtime put back.
    const f = path.join(s.specs, 'set.yaml');
    const before = statSync(f);
    writeFileSync(f, setFile(CMD.replace('echo', 'ECHO')));
    utimesSync(f, before.atime, before.mtime);
    const r = await s.load();
    expect(r.errors).to.deep.equal([]);
    expect(new Set(r.specs.map((x) => x.spec.image))).to.deep.equal(new Set(['berth/busybox:local']));
    expect(r.specs.find((x) => x.spec.name === 'big-3-q')?.spec.command).to.deep.equal(['sh', '-c', 'ECHO 3 q']);
    const old = new Set(first.specs.map((x) => x.hash));
    expect(r.specs.filter((x) => old.has(x.hash))).to.deep.equal([]);
  });

  it('ignores a damaged shape or coordinates and loads the file again', async () => {
    const s = setup({ 'set.yaml': setFile(CMD) });
    const want = comparable(await s.load());
    const file = s.cacheFile() as string;
    const good = readFileSync(file, 'utf8');
    const damage: [string, (t: string) => string][] = [
      ['a slot of no kind', (t) => t.replace('"slots":[', '"slots":[{"text":"x"},')],
      ['no shape', (t) => t.replace('"shape":{"shape":', '"shape":{"nope":')],
      ['coordinates cut short', (t) => t.replace(/"coords":\[\{[^}]*\},/, '"coords":[')],
      ['a slot past the arguments', (t) => t.replace(/"slots":\[\{"command":\d+/, '"slots":[{"command":9')],
      ['another base', (t) => t.replace('"workingDir":"/workspace"', '"workingDir":"/elsewhere"')],
      ['format 1', (t) => t.replace('"format":3', '"format":1')],
    ];
    for (const [what, f] of damage) {
      const bad = f(good);
      expect(bad, what).to.not.equal(good);
      writeFileSync(file, bad);
      expect(comparable(await s.load()), what).to.deep.equal(want);
    }
  });

  it("checks every child's results folder again: one that became a link out is an error at that child only", async () => {
    const s = setup({ 'set.yaml': setFile(CMD) });
    mkdirSync(s.results);
    expect((await s.load()).errors).to.deep.equal([]);
    symlinkSync(tempDir(), path.join(s.results, 'big-7-w'));
    const r = await s.load();
    expect(r.errors.map((e) => [e.code, e.attempt])).to.deep.equal([['path-escape', 'big-7-w']]);
    expect(r.specs).to.have.length(143);
  });

  it('never keeps a set with a fromDir axis: a new folder is a new child in the next process', async () => {
    const s = setup({ 'set.yaml': setFile(CMD, '{fromDir: ./tasks}'), 'tasks/t1/x': 'x', 'tasks/t2/x': 'x' });
    expect((await s.load()).specs).to.have.length(24);
    mkdirSync(path.join(s.specs, 'tasks', 't3'));
    const r = await s.load();
    expect(r.specs).to.have.length(36);
    expect(r.specs.some((x) => x.spec.name === 'big-t3-q')).to.equal(true);
  });
});
