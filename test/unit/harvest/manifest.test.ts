/** The results manifest: streamed, within the caps (spec.harvest), what was left out listed (bounded) and removed. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { extractResults } from '../../../src/backend/swarm/results';
import { REASONS } from '../../../src/constants';
import { truncatedStatus } from '../../../src/plan/results-truncated';
import { removeLeftOut, writeManifest, type Manifest, type ManifestOptions } from '../../../src/harvest/manifest';
import { classify } from '../../../src/sets/outcome';
import type { AttemptStatus } from '../../../src/status/types';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-manifest-test-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function put(files: Record<string, number | { link: string } | 'dir'>): Promise<string> {
  const root = path.join(dir, 'results');
  await fs.mkdir(root, { recursive: true });
  for (const [p, v] of Object.entries(files)) {
    const abs = path.join(root, p);
    await fs.mkdir(path.dirname(abs), { recursive: true });
    if (v === 'dir') await fs.mkdir(abs, { recursive: true });
    else if (typeof v === 'number') await fs.writeFile(abs, Buffer.alloc(v, 0x61));
    else await fs.symlink(v.link, abs);
  }
  return root;
}

async function manifestOf(root: string, opts: ManifestOptions = {}): Promise<{ m: Manifest; text: string }> {
  const file = path.join(dir, `manifest-${Math.random()}.json`);
  const h = await fs.open(file, 'w');
  try {
    await writeManifest(root, h, opts);
  } finally {
    await h.close();
  }
  const text = await fs.readFile(file, 'utf8');
  return { m: JSON.parse(text) as Manifest, text };
}

const paths = (m: Manifest) => m.files.map((f) => f.path);
const budget = { maxBytes: 1024 ** 3, maxSeconds: 60 };

describe('results manifest (streamed, capped)', () => {
  it('lists everything within the caps, in the form JSON.stringify(_, null, 2) writes, and truncates nothing', async () => {
    const root = await put({ 'a.txt': 3, 'd/b.txt': 2, 'd/l': { link: '../a.txt' } });
    const { m, text } = await manifestOf(root, { hash: budget });
    expect(paths(m)).to.deep.equal(['a.txt', 'd', 'd/b.txt', 'd/l']);
    expect(text).to.equal(JSON.stringify(m, null, 2) + '\n');
    expect(m.truncation).to.include({ truncated: false, keptEntries: 4, keptBytes: 5, leftOutEntries: 0, leftOutNotListed: 0 });
    expect(m.hashing).to.include({ complete: true, hashedFiles: 2, hashedBytes: 5 });
    expect(m.files[0]?.sha256).to.equal('9834876dcfb05cb167a5c24953eba58c4ac89b1adf57f28f2f9d09af107ee8f0');
  });

  it('an empty or missing folder: an empty list, still valid JSON', async () => {
    const { m, text } = await manifestOf(path.join(dir, 'none'));
    expect(m.files).to.deep.equal([]);
    expect(text).to.equal(JSON.stringify(m, null, 2) + '\n');
  });

  it('maxFiles: the first entries in manifest order are kept (folders count), the rest listed left out and removed', async () => {
    const root = await put({ a: 1, b: 1, 'c/x': 1, 'c/y': 1, d: 1, e: { link: '/etc/passwd' } });
    const caps = { maxBytes: 1024, maxFiles: 4 };
    const { m } = await manifestOf(root, { hash: budget, caps });
    expect(paths(m)).to.deep.equal(['a', 'b', 'c', 'c/x']);
    expect(m.truncation).to.include({ truncated: true, keptEntries: 4, keptBytes: 3, leftOutEntries: 3, leftOutBytes: 2, leftOutNotListed: 0 });
    expect(m.truncation.leftOut.map((l) => `${l.path}:${l.why}`)).to.deep.equal(['c/y:max-files', 'd:max-files', 'e:max-files']);
    expect(await removeLeftOut(root, caps)).to.equal(3);
    // the link is removed, never followed
    await fs.access('/etc/passwd');
    const again = await manifestOf(root, { hash: budget, caps });
    expect(paths(again.m)).to.deep.equal(paths(m));
    expect(again.m.truncation.truncated).to.equal(false);
  });

  it('maxBytes: a file that does not fit is left out whole, a later smaller one still fits', async () => {
    const root = await put({ a: 50, b: 80, c: 40, d: 11 });
    const caps = { maxBytes: 100, maxFiles: 100 };
    const { m } = await manifestOf(root, { hash: budget, caps });
    expect(paths(m)).to.deep.equal(['a', 'c']);
    expect(m.truncation).to.include({ keptBytes: 90, leftOutEntries: 2, leftOutBytes: 91 });
    expect(m.truncation.leftOut.map((l) => `${l.path}:${l.why}:${l.size}`)).to.deep.equal(['b:max-bytes:80', 'd:max-bytes:11']);
    await removeLeftOut(root, caps);
    expect((await fs.readdir(root)).sort()).to.deep.equal(['a', 'c']);
  });

  it('a folder left out takes everything under it along, and is removed with it', async () => {
    const root = await put({ a: 1, 'z/deep/x': 1, 'z/deep/y': 1, 'z/w': 1 });
    const caps = { maxBytes: 1024, maxFiles: 1 };
    const { m } = await manifestOf(root, { hash: budget, caps });
    expect(paths(m)).to.deep.equal(['a']);
    expect(m.truncation.leftOut.map((l) => `${l.path}:${l.why}`)).to.deep.equal([
      'z:max-files',
      'z/deep:in-left-out-folder',
      'z/deep/x:in-left-out-folder',
      'z/deep/y:in-left-out-folder',
      'z/w:in-left-out-folder',
    ]);
    expect(await removeLeftOut(root, caps)).to.equal(5);
    expect(await fs.readdir(root)).to.deep.equal(['a']);
  });

  it('the list of what was left out is bounded: past it, it says how many more', async () => {
    const files: Record<string, number> = {};
    for (let i = 0; i < 50; i++) files[`f${String(i).padStart(2, '0')}`] = 1;
    const root = await put(files);
    const { m } = await manifestOf(root, { hash: budget, caps: { maxBytes: 1024, maxFiles: 10 }, leftOutListed: 5 });
    expect(m.files).to.have.length(10);
    expect(m.truncation).to.include({ leftOutEntries: 40, leftOutNotListed: 35 });
    expect(m.truncation.leftOut.map((l) => l.path)).to.deep.equal(['f10', 'f11', 'f12', 'f13', 'f14']);
  });

  it('what a collect left out before is counted and listed first', async () => {
    const root = await put({ a: 1 });
    const before = { entries: 7, bytes: 700, listed: [{ path: 'big', type: 'file' as const, size: 700, why: 'max-bytes' as const }] };
    const { m } = await manifestOf(root, { hash: budget, before });
    expect(m.truncation).to.include({ truncated: true, leftOutEntries: 7, leftOutBytes: 700, leftOutNotListed: 6, keptEntries: 1 });
    expect(m.truncation.leftOut[0]?.path).to.equal('big');
  });
});

describe('a truncated run: its status', () => {
  const rec = (over: Partial<AttemptStatus>): AttemptStatus =>
    ({ name: 'a', phase: 'Succeeded', reason: REASONS.completed, run: 1, retriesUsed: 0, ...over }) as AttemptStatus;
  const t = {
    truncated: true,
    maxBytes: 10,
    maxFiles: 5,
    keptEntries: 5,
    keptBytes: 10,
    leftOutEntries: 3,
    leftOutBytes: 30,
    leftOut: [],
    leftOutNotListed: 3,
  };

  it('a run that exited 0 says ResultsTruncated, and still counts as passed', () => {
    const s = truncatedStatus(rec({}), t);
    expect(s).to.include({ phase: 'Succeeded', reason: REASONS.resultsTruncated });
    expect(s.message).to.match(/3 entries \(30 bytes of files\) left out/);
    expect(classify(s, undefined, 0).outcome).to.equal('passed');
  });

  it('a failed run keeps its reason (which decides how it counts) and says ResultsTruncated in its warnings', () => {
    const s = truncatedStatus(rec({ phase: 'Failed', reason: REASONS.error }), t);
    expect(s).to.include({ phase: 'Failed', reason: REASONS.error });
    expect(s.warnings?.[0]).to.match(/^ResultsTruncated: results truncated/);
    expect(classify(s, undefined, 0).outcome).to.equal('failed');
  });

  it('nothing left out: the status as it was', () => {
    const r = rec({});
    expect(truncatedStatus(r, { ...t, truncated: false, leftOutEntries: 0 })).to.equal(r);
  });
});

describe("swarm's collect (extractResults): streamed, within the caps", () => {
  async function tarOf(entries: { name: string; size?: number; type?: 'directory' | 'symlink'; linkname?: string }[]): Promise<Readable> {
    const p = pack();
    for (const e of entries) {
      if (e.type) p.entry({ name: `results/${e.name}`, type: e.type, ...(e.linkname ? { linkname: e.linkname } : {}) });
      else p.entry({ name: `results/${e.name}`, size: e.size ?? 0 }, Buffer.alloc(e.size ?? 0, 0x62));
    }
    p.finalize();
    return p as unknown as Readable;
  }

  it('writes what fits in the order it comes, and returns what it left out', async () => {
    const into = path.join(dir, 'into');
    const tar = await tarOf([
      { name: 'd', type: 'directory' },
      { name: 'd/a', size: 60 },
      { name: 'd/b', size: 50 },
      { name: 'c', size: 30 },
      { name: 'e', size: 1 },
    ]);
    const left = await extractResults(tar, 'results', into, { maxBytes: 100, maxFiles: 3 });
    expect(left).to.deep.equal({
      entries: 2,
      bytes: 51,
      listed: [
        { path: 'd/b', type: 'file', size: 50, why: 'max-bytes' },
        { path: 'e', type: 'file', size: 1, why: 'max-files' },
      ],
    });
    expect((await fs.readFile(path.join(into, 'd/a'))).length).to.equal(60);
    expect((await fs.readFile(path.join(into, 'c'))).length).to.equal(30);
    expect(
      await fs.access(path.join(into, 'd/b')).then(
        () => 'there',
        () => 'absent',
      ),
    ).to.equal('absent');
  });

  it('a link in the way of a file is not followed', async () => {
    const into = path.join(dir, 'into');
    const outside = path.join(dir, 'outside');
    await fs.writeFile(outside, 'keep');
    const tar = await tarOf([
      { name: 'x', type: 'symlink', linkname: outside },
      { name: 'x', size: 4 },
    ]);
    await extractResults(tar, 'results', into);
    expect(await fs.readFile(outside, 'utf8')).to.equal('keep');
  });
});
