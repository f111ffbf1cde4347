/**
 * The workspace export's tar-to-changes logic (workspace/tar.ts) and its patch
 * (workspace/patch.ts), with hand-built tar streams: what an engine sends, and what a hostile one
 * could.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, promises as fsp, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pack, type Header } from 'tar-stream';
import { DEFAULTS, WORKSPACE } from '../../../src/constants';
import type { Engine } from '../../../src/engine/types';
import type { FixtureEntry } from '../../../src/spec/fixture-scan';
import { exportWorkspace, writeWorkspaceBase, type WorkspaceBase } from '../../../src/workspace/export';
import { collectChanges, type CollectOptions } from '../../../src/workspace/tar';
import type { WorkspaceChanges } from '../../../src/workspace/types';

type Item = Partial<Header> & { name: string; body?: Buffer | string };

async function tarOf(items: Item[]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const c of p) chunks.push(c as Buffer);
  })();
  for (const { body, ...h } of items) {
    const b = body === undefined ? undefined : Buffer.from(body);
    await new Promise<void>((resolve, reject) => {
      const cb = (err?: Error | null) => (err ? reject(err) : resolve());
      if (b) p.entry({ mode: 0o644, ...h, size: b.length }, b, cb);
      else p.entry({ mode: h.type === 'directory' ? 0o755 : 0o644, ...h }, cb);
    });
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** Sets byte `at` of the name in the tar header at `offset` and fixes the header's checksum. */
function setNameByte(tar: Buffer, offset: number, at: number, byte: number): void {
  tar[offset + at] = byte;
  tar.fill(0x20, offset + 148, offset + 156);
  let sum = 0;
  for (let i = offset; i < offset + 512; i++) sum += tar[i] as number;
  tar.write(sum.toString(8).padStart(6, '0') + '\0 ', offset + 148, 'latin1');
}

/** One ustar header block. */
function encodeHeader(h: Partial<Header> & { name: string }): Buffer {
  const b = Buffer.alloc(512);
  b.write(h.name, 0, 100, 'utf8');
  b.write(((h.mode ?? 0o644) & 0o7777).toString(8).padStart(7, '0') + '\0', 100, 'latin1');
  b.write('0000000\0', 108, 'latin1');
  b.write('0000000\0', 116, 'latin1');
  b.write((h.size ?? 0).toString(8).padStart(11, '0') + '\0', 124, 'latin1');
  b.write('00000000000\0', 136, 'latin1');
  b.write('0', 156, 'latin1');
  b.write('ustar\x0000', 257, 'latin1');
  setNameByte(b, 0, 0, b[0] as number);
  return b;
}

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const file = (p: string, body: string, mode = 0o644): FixtureEntry => ({ path: p, type: 'file', mode, size: Buffer.byteLength(body), sha256: sha(body) });
const dir = (p: string, mode = 0o755): FixtureEntry => ({ path: p, type: 'dir', mode, size: 0 });

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-ws-'));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

async function collect(items: Item[], index: FixtureEntry[] | null, over: Partial<CollectOptions> = {}) {
  const filesDir = over.filesDir ?? path.join(tmp, 'files');
  await fsp.mkdir(filesDir, { recursive: true });
  const tar = Readable.from([await tarOf(items)]);
  const got = await collectChanges(tar, 'workspace', {
    index: index ? new Map(index.map((e) => [e.path, e])) : null,
    exclude: [],
    maxBytes: 1 << 20,
    maxFiles: 1000,
    filesDir,
    ...over,
  });
  return { got, filesDir, tar };
}

const listFiles = (root: string): string[] => {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const n of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${n.name}` : n.name;
      if (n.isDirectory()) walk(path.join(d, n.name), r);
      else out.push(`${r}${n.isSymbolicLink() ? '@' : ''}`);
    }
  };
  walk(root, '');
  return out.sort();
};

const FIXTURE = [
  dir('.'),
  file('a.txt', 'one\ntwo\n'),
  file('b.txt', 'bee\n'),
  file('run.sh', 'echo hi\n'),
  dir('src'),
  file('src/m.py', 'x = 1\n'),
  file('img.bin', '\0\x01\x02'),
];

describe('workspace/tar: the workspace tar against the fixture', () => {
  it('lists added, modified, deleted and type-changed paths; writes only added and modified files', async () => {
    const { got, filesDir } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/a.txt', body: 'one\nTWO\n' },
        { name: 'workspace/run.sh', body: 'echo hi\n', mode: 0o755 },
        { name: 'workspace/src', type: 'file', body: 'now a file\n' },
        { name: 'workspace/img.bin', body: '\0\x01\x02' },
        { name: 'workspace/new.txt', body: 'new\n', mode: 0o600 },
        { name: 'workspace/lib/', type: 'directory' },
        { name: 'workspace/lib/ok', type: 'symlink', linkname: '../a.txt' },
      ],
      FIXTURE,
    );
    expect(got.added).to.deep.equal([
      { path: 'lib', type: 'dir', mode: 0o755 },
      { path: 'lib/ok', type: 'link', target: '../a.txt' },
      { path: 'new.txt', type: 'file', size: 4, sha256: sha('new\n'), mode: 0o600 },
    ]);
    expect(got.modified).to.deep.equal([
      { path: 'a.txt', type: 'file', size: 8, sha256: sha('one\nTWO\n'), mode: 0o644 },
      { path: 'run.sh', type: 'file', size: 8, sha256: sha('echo hi\n'), mode: 0o755 },
    ]);
    expect(got.typeChanged).to.deep.equal([{ path: 'src', type: 'file', size: 11, sha256: sha('now a file\n'), mode: 0o644, from: 'dir' }]);
    expect(got.deleted).to.deep.equal([
      { path: 'b.txt', type: 'file' },
      { path: 'src/m.py', type: 'file' },
    ]);
    expect(got.truncated).to.equal(false);
    expect(listFiles(filesDir)).to.deep.equal(['a.txt', 'new.txt', 'run.sh', 'src']);
    expect(readFileSync(path.join(filesDir, 'a.txt'), 'utf8')).to.equal('one\nTWO\n');
  });

  it('without a fixture everything is added', async () => {
    const { got } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/x', body: 'x' },
      ],
      null,
    );
    expect(got.added.map((e) => e.path)).to.deep.equal(['x']);
    expect(got.deleted).to.deep.equal([]);
  });

  it('leaves out excluded folders whole (defaults at any depth, the user globs), listed once, never as deleted', async () => {
    const { got, filesDir } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/node_modules/', type: 'directory' },
        { name: 'workspace/node_modules/x/index.js', body: 'x' },
        { name: 'workspace/node_modules/y.js', body: 'y' },
        { name: 'workspace/deep/er/__pycache__/m.pyc', body: 'c' },
        { name: 'workspace/.env', body: 'API_KEY=sk-secret' },
        { name: 'workspace/conf/.env.local', body: 'TOKEN=t' },
        { name: 'workspace/out.log', body: 'log' },
        { name: 'workspace/dist/bundle.js', body: 'b' },
        { name: 'workspace/keep.txt', body: 'k' },
      ],
      [dir('.'), file('dist/old.js', 'o'), dir('dist')],
      { exclude: ['*.log', 'dist'] },
    );
    expect(got.omitted).to.deep.equal([
      { path: 'node_modules', reason: 'excluded' },
      { path: 'deep/er/__pycache__', reason: 'excluded' },
      { path: '.env', reason: 'excluded' },
      { path: 'conf/.env.local', reason: 'excluded' },
      { path: 'out.log', reason: 'excluded' },
      { path: 'dist', reason: 'excluded' },
    ]);
    expect(got.added.map((e) => e.path)).to.deep.equal(['keep.txt']);
    expect(got.deleted).to.deep.equal([]);
    expect(listFiles(filesDir)).to.deep.equal(['keep.txt']);
  });

  it('never follows or writes a link; one leaving the tree is link-outside', async () => {
    const { got, filesDir } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/pw', type: 'symlink', linkname: '/etc/passwd' },
        { name: 'workspace/up', type: 'symlink', linkname: '../../etc' },
        { name: 'workspace/in', type: 'symlink', linkname: 'sub/../a.txt' },
      ],
      null,
    );
    expect(got.omitted).to.deep.equal([
      { path: 'pw', reason: 'link-outside' },
      { path: 'up', reason: 'link-outside' },
    ]);
    expect(got.added).to.deep.equal([{ path: 'in', type: 'link', target: 'sub/../a.txt' }]);
    expect(listFiles(filesDir)).to.deep.equal([]);
  });

  it('refuses hostile names: .., absolute, another top, repeats; fifos and devices are not-regular', async () => {
    const { got, filesDir } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/../escape', body: 'e' },
        { name: '/etc/evil', body: 'e' },
        { name: 'other/x', body: 'e' },
        { name: 'workspace/a/../../b', body: 'e' },
        { name: 'workspace/dup', body: '1' },
        { name: 'workspace/dup', body: '2' },
        { name: 'workspace/f', type: 'fifo' },
        { name: 'workspace/d', type: 'character-device', devmajor: 1, devminor: 3 },
      ],
      null,
    );
    expect(got.omitted).to.deep.equal([
      { path: 'workspace/../escape', reason: 'unsafe-name' },
      { path: '/etc/evil', reason: 'unsafe-name' },
      { path: 'other/x', reason: 'unsafe-name' },
      { path: 'workspace/a/../../b', reason: 'unsafe-name' },
      { path: 'dup', reason: 'unsafe-name' },
      { path: 'f', reason: 'not-regular' },
      { path: 'd', reason: 'not-regular' },
    ]);
    expect(listFiles(filesDir)).to.deep.equal(['dup']);
    expect(readFileSync(path.join(filesDir, 'dup'), 'utf8')).to.equal('1');
    expect(listFiles(tmp)).to.deep.equal(['files/dup']);
  });

  it('a file where a folder was, or a folder where a file was: the later entry is left out, its write taken back, the counts too', async () => {
    const items: Item[] = [{ name: 'workspace/', type: 'directory' }];
    // many small files first: the writes are under way in the background when the clashes come
    for (let i = 0; i < 40; i++) items.push({ name: `workspace/many/f${i}`, body: `${i}\n` });
    items.push(
      { name: 'workspace/a', body: 'a file\n' },
      { name: 'workspace/a/b', body: 'under a file\n' },
      { name: 'workspace/c/d', body: 'in c\n' },
      { name: 'workspace/c', body: 'a file over the folder c\n' },
      { name: 'workspace/lnk', type: 'link', linkname: 'workspace/c' },
      { name: 'workspace/z', body: 'last\n' },
    );
    // 40 + a + c/d + z listed, a/b, c and lnk left out: 46 entries, each counted once (c's taken back from the listed)
    const { got, filesDir } = await collect(items, null, { maxFiles: 46 });
    expect(got.omitted).to.deep.include.members([
      { path: 'a/b', reason: 'unsafe-name' },
      { path: 'c', reason: 'unsafe-name' },
      { path: 'lnk', reason: 'not-regular' },
    ]);
    expect(got.added.map((e) => e.path)).to.include.members(['a', 'c/d', 'z', 'many/f0', 'many/f39']);
    expect(got.added.map((e) => e.path)).to.not.include.members(['c', 'a/b', 'lnk']);
    expect(got.truncated).to.equal(false);
    expect(readFileSync(path.join(filesDir, 'c', 'd'), 'utf8')).to.equal('in c\n');
    expect(readFileSync(path.join(filesDir, 'z'), 'utf8')).to.equal('last\n');
    expect(listFiles(filesDir)).to.have.length(43);
    // the same, its small files written at every one (the bytes held before a write at their least)
    const one = await collect(items, null, { maxFiles: 46, filesDir: path.join(tmp, 'files-one'), heldBytes: 1 });
    expect(one.got).to.deep.equal(got);
    expect(listFiles(one.filesDir)).to.deep.equal(listFiles(filesDir));
  });

  it('thousands of files below a file are each left out once, the rest of the lists as they were', async () => {
    const items: Item[] = [
      { name: 'workspace/', type: 'directory' },
      { name: 'workspace/a', body: 'a file\n' },
    ];
    for (let i = 0; i < 5000; i++) items.push({ name: `workspace/a/f${i}`, body: `${i}\n` });
    items.push({ name: 'workspace/z', body: 'last\n', mode: 0o200 });
    const { got, filesDir } = await collect(items, null, { maxFiles: 10_000 });
    expect(got.added.map((e) => e.path)).to.deep.equal(['a', 'z']);
    expect(got.omitted).to.have.length(5000);
    expect(got.omitted.every((o) => o.reason === 'unsafe-name' && o.path.startsWith('a/f'))).to.equal(true);
    expect(got.modeLater).to.deep.equal([{ path: 'z', mode: 0o200 }]);
    expect(listFiles(filesDir)).to.deep.equal(['a', 'z']);
  });

  it('clashes across small files held for writing, large files streamed and hard links keep the archive order: the later entry is left out', async () => {
    const big = 'x'.repeat((1 << 20) + 1);
    const items: Item[] = [
      { name: 'workspace/', type: 'directory' },
      // a small file (held), then a large one below it (streamed): the large one is left out
      { name: 'workspace/e', body: 'a file\n' },
      { name: 'workspace/e/big', body: big },
      // a large file, then a small one where its folder is: the small one is left out
      { name: 'workspace/g/big', body: big },
      { name: 'workspace/g', body: 'over the folder g\n' },
      // a hard link below a small file held: left out, never a failure
      { name: 'workspace/h', body: 'h\n' },
      { name: 'workspace/h/x', type: 'link', linkname: 'workspace/e' },
      // and one that works, to a file still held when it comes
      { name: 'workspace/k', body: 'k\n' },
      { name: 'workspace/k2', type: 'link', linkname: 'workspace/k' },
    ];
    const { got, filesDir } = await collect(items, null, { maxBytes: 8 << 20 });
    expect(got.omitted).to.deep.equal([
      { path: 'e/big', reason: 'unsafe-name' },
      { path: 'g', reason: 'unsafe-name' },
      { path: 'h/x', reason: 'unsafe-name' },
    ]);
    expect(got.added.map((e) => e.path)).to.deep.equal(['e', 'g/big', 'h', 'k', 'k2']);
    expect(listFiles(filesDir)).to.deep.equal(['e', 'g/big', 'h', 'k', 'k2']);
    expect(readFileSync(path.join(filesDir, 'k2'), 'utf8')).to.equal('k\n');
    expect(got.truncated).to.equal(false);
  });

  it('a name that is not UTF-8 is left out (name-not-utf8), shown with U+FFFD', async () => {
    // a ustar name holding the byte 0xff, as a file system of bytes allows
    const filesDir = path.join(tmp, 'files');
    await fsp.mkdir(filesDir);
    const tar = await tarOf([
      { name: 'workspace/', type: 'directory' },
      { name: 'workspace/badX.txt', body: 'x' },
      { name: 'workspace/gut-ß.txt', body: 'y' },
    ]);
    setNameByte(tar, 512, 'workspace/bad'.length, 0xff);
    const got = await collectChanges(Readable.from([tar]), 'workspace', { index: null, exclude: [], maxBytes: 1 << 20, maxFiles: 10, filesDir });
    expect(got.omitted).to.deep.equal([{ path: 'bad\uFFFD.txt', reason: 'name-not-utf8' }]);
    expect(got.added.map((e) => e.path)).to.deep.equal(['gut-ß.txt']);
  });

  it('very long and very deep paths are too-deep, and what is kept of the name is bounded', async () => {
    const long = 'x'.repeat(5000);
    const deep = Array.from({ length: 300 }, () => 'd').join('/');
    const { got } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: `workspace/${long}`, body: 'x' },
        { name: `workspace/${deep}/f`, body: 'x' },
      ],
      null,
    );
    expect(got.omitted.map((o) => o.reason)).to.deep.equal(['too-deep', 'too-deep']);
    expect(got.omitted[0]?.path.length).to.be.at.most(1025);
  });

  it('maxBytes: the first file that does not fit truncates, is listed, and the stream is destroyed', async () => {
    const big = Buffer.alloc(64 * 1024, 1);
    const items: Item[] = [{ name: 'workspace/', type: 'directory' }];
    for (let i = 0; i < 50; i++) items.push({ name: `workspace/f${String(i).padStart(2, '0')}`, body: big });
    const { got, tar, filesDir } = await collect(items, null, { maxBytes: 200 * 1024 });
    expect(got.truncated).to.equal(true);
    expect(got.added.map((e) => e.path)).to.deep.equal(['f00', 'f01', 'f02']);
    expect(got.omitted).to.deep.equal([{ path: 'f03', reason: 'max-bytes' }]);
    expect(tar.destroyed).to.equal(true);
    expect(listFiles(filesDir)).to.deep.equal(['f00', 'f01', 'f02']);
    expect(got.deleted).to.deep.equal([]);
  });

  it('maxFiles: entries listed at most, then truncated', async () => {
    const items: Item[] = [{ name: 'workspace/', type: 'directory' }];
    for (let i = 0; i < 20; i++) items.push({ name: `workspace/f${String(i).padStart(2, '0')}`, body: 'x' });
    const { got, filesDir } = await collect(items, null, { maxFiles: 5 });
    expect(got.truncated).to.equal(true);
    expect(got.added).to.have.length(5);
    expect(got.omitted).to.deep.equal([{ path: 'f05', reason: 'max-files' }]);
    expect(listFiles(filesDir)).to.have.length(5);
  });

  it('a huge file over the cap is never held in memory, and the stream is read no further', async () => {
    // 256 MiB made on the fly behind one header, the cap at 1 MiB: the export stops at the header
    let sent = 0;
    const header = encodeHeader({ name: 'workspace/huge', size: 256 << 20, mode: 0o644, type: 'file', mtime: new Date(0) });
    const chunk = Buffer.alloc(1 << 20, 7);
    const tar = Readable.from(
      (async function* () {
        yield header;
        for (; sent < 256 << 20; sent += chunk.length) yield chunk;
      })(),
    );
    const before = process.memoryUsage().rss;
    const got = await collectChanges(tar, 'workspace', { index: null, exclude: [], maxBytes: 1 << 20, maxFiles: 10, filesDir: tmp });
    expect(got.truncated).to.equal(true);
    expect(got.omitted).to.deep.equal([{ path: 'huge', reason: 'max-bytes' }]);
    expect(tar.destroyed).to.equal(true);
    expect(sent).to.be.below(64 << 20);
    expect(process.memoryUsage().rss - before).to.be.below(128 << 20);
  });

  it('an unchanged file over the byte cap is hashed, not written, and does not truncate', async () => {
    const body = 'same content\n';
    const { got, filesDir } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/same', body },
      ],
      [dir('.'), file('same', body)],
      { maxBytes: 4 },
    );
    expect(got.truncated).to.equal(false);
    expect([got.added, got.modified, got.deleted, got.omitted]).to.deep.equal([[], [], [], []]);
    expect(listFiles(filesDir)).to.deep.equal([]);
  });

  it('a file with the size and mode it had in the fixture is compared before it is written, above the in-memory bound or not', async () => {
    const big = 'b'.repeat(DEFAULTS.workspaceCompareInMemoryBytes + 100);
    const bigChanged = 'c'.repeat(big.length);
    const { got, filesDir } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/big-same', body: big },
        { name: 'workspace/big-changed', body: bigChanged },
        { name: 'workspace/small-same', body: 'small\n' },
        { name: 'workspace/small-changed', body: 'SMALL\n' },
      ],
      [dir('.'), file('big-same', big), file('big-changed', big), file('small-same', 'small\n'), file('small-changed', 'small\n')],
      { maxBytes: 4 << 20 },
    );
    expect(got.modified.map((e) => [e.path, e.sha256])).to.deep.equal([
      ['big-changed', sha(bigChanged)],
      ['small-changed', sha('SMALL\n')],
    ]);
    expect(listFiles(filesDir)).to.deep.equal(['big-changed', 'small-changed']);
    expect(readFileSync(path.join(filesDir, 'small-changed'), 'utf8')).to.equal('SMALL\n');
    expect(readFileSync(path.join(filesDir, 'big-changed'), 'utf8')).to.equal(bigChanged);
    // a changed one of the fixture's size that does not fit: truncated there, nothing of it written
    const over = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/small-changed', body: 'SMALL\n' },
      ],
      [dir('.'), file('small-changed', 'small\n')],
      { maxBytes: 4, filesDir: path.join(tmp, 'files-over') },
    );
    expect(over.got.truncated).to.equal(true);
    expect(over.got.omitted).to.deep.equal([{ path: 'small-changed', reason: 'max-bytes' }]);
    expect(listFiles(over.filesDir)).to.deep.equal([]);
  });

  it('a hard link to a written file is the same bytes under its own name', async () => {
    const { got, filesDir } = await collect(
      [
        { name: 'workspace/', type: 'directory' },
        { name: 'workspace/a', body: 'aaa' },
        { name: 'workspace/b', type: 'link', linkname: 'workspace/a' },
      ],
      null,
    );
    expect(got.added.map((e) => [e.path, e.sha256])).to.deep.equal([
      ['a', sha('aaa')],
      ['b', sha('aaa')],
    ]);
    expect(readFileSync(path.join(filesDir, 'b'), 'utf8')).to.equal('aaa');
  });
});

describe('workspace/export: the whole export, crash-safe', () => {
  const fixtureDir = () => path.join(tmp, 'fixture');

  async function setup(settings: Partial<WorkspaceBase['settings']> = {}) {
    const fx = fixtureDir();
    await fsp.mkdir(path.join(fx, 'src'), { recursive: true });
    await fsp.writeFile(path.join(fx, 'a.txt'), 'one\ntwo\nthree\n');
    await fsp.writeFile(path.join(fx, 'gone.txt'), 'bye\n');
    await fsp.writeFile(path.join(fx, 'img.bin'), Buffer.from([0, 1, 2, 3]));
    await fsp.writeFile(path.join(fx, 'src', 'm.py'), 'x = 1');
    const entries = [
      dir('.'),
      file('a.txt', 'one\ntwo\nthree\n'),
      file('gone.txt', 'bye\n'),
      file('img.bin', '\0\x01\x02\x03'),
      dir('src'),
      file('src/m.py', 'x = 1'),
    ];
    const runDir = path.join(tmp, 'run-1');
    await fsp.mkdir(runDir);
    const base: WorkspaceBase = {
      version: 1,
      workingDir: '/workspace',
      settings: { export: 'changes', exclude: [], maxBytes: 1 << 20, maxFiles: 1000, ...settings },
      fixture: fx,
      fixtureDigest: 'd'.repeat(64),
      copied: true,
      entries,
    };
    await writeWorkspaceBase(runDir, base);
    return { runDir, fx };
  }

  const WORKSPACE_TAR: Item[] = [
    { name: 'workspace/', type: 'directory' },
    { name: 'workspace/a.txt', body: 'one\n2\nthree\nfour' },
    { name: 'workspace/img.bin', body: Buffer.from([0, 9, 2, 3]) },
    { name: 'workspace/new.txt', body: 'fresh\n', mode: 0o755 },
    { name: 'workspace/src/', type: 'directory' },
    { name: 'workspace/src/m.py', body: 'x = 1', mode: 0o755 },
  ];

  function engineWith(tar: () => Promise<Readable>): Engine {
    return { containers: { getArchive: async () => tar() } } as unknown as Engine;
  }

  it('writes changes.json, a patch git applies, and files/; a second export leaves the first', async function () {
    const { runDir, fx } = await setup();
    let reads = 0;
    const engine = engineWith(async () => {
      reads++;
      return Readable.from([await tarOf(WORKSPACE_TAR)]);
    });
    expect(await exportWorkspace(engine, runDir, 'c1')).to.deep.equal({ done: true, truncated: false });
    const ws = path.join(runDir, WORKSPACE.dir);
    const changes = JSON.parse(readFileSync(path.join(ws, WORKSPACE.changes), 'utf8')) as WorkspaceChanges;
    expect(changes.added.map((e) => e.path)).to.deep.equal(['new.txt']);
    expect(changes.modified.map((e) => [e.path, e.binary ?? false])).to.deep.equal([
      ['a.txt', false],
      ['img.bin', true],
      ['src/m.py', false],
    ]);
    expect(changes.deleted).to.deep.equal([{ path: 'gone.txt', type: 'file' }]);
    expect(statSync(path.join(ws, 'files', 'new.txt')).mode & 0o777).to.equal(0o755);
    const patch = readFileSync(path.join(ws, WORKSPACE.patch), 'utf8');
    expect(patch).to.include('Binary files a/img.bin and b/img.bin differ\n');
    expect(patch).to.include('\\ No newline at end of file');
    expect(patch).to.include('diff --git a/src/m.py b/src/m.py\nold mode 100644\nnew mode 100755\n');
    // git apply and patch -p1 on a clean copy of the fixture give the workspace's text files
    for (const tool of ['git', 'patch'] as const) {
      const copy = path.join(tmp, `copy-${tool}`);
      await fsp.cp(fx, copy, { recursive: true });
      if (tool === 'git') execFileSync('git', ['apply', '--check', path.join(ws, WORKSPACE.patch)], { cwd: copy });
      if (tool === 'git') execFileSync('git', ['apply', path.join(ws, WORKSPACE.patch)], { cwd: copy });
      else execFileSync('patch', ['-p1', '-s', '-i', path.join(ws, WORKSPACE.patch)], { cwd: copy });
      expect(readFileSync(path.join(copy, 'a.txt'), 'utf8'), tool).to.equal('one\n2\nthree\nfour');
      expect(readFileSync(path.join(copy, 'new.txt'), 'utf8'), tool).to.equal('fresh\n');
      expect(statSync(path.join(copy, 'src', 'm.py')).mode & 0o100, tool).to.equal(0o100);
      await fsp.access(path.join(copy, 'gone.txt')).then(
        () => expect.fail(`${tool}: gone.txt still there`),
        () => undefined,
      );
    }
    expect(await exportWorkspace(engine, runDir, 'c1')).to.deep.equal({ done: true, truncated: false });
    expect(reads).to.equal(1);
  });

  it('every file in files/ gets its mode; one its owner may not read gets it after the patch has read it', async () => {
    const { runDir } = await setup({ maxBytes: 8 << 20 });
    const items: Item[] = [
      ...WORKSPACE_TAR,
      { name: 'workspace/locked.txt', body: 'write only\n', mode: 0o200 },
      { name: 'workspace/none.txt', body: 'no owner bits\n', mode: 0o020 },
      { name: 'workspace/ro.sh', body: 'echo ro\n', mode: 0o555 },
      { name: 'workspace/big.bin', body: Buffer.alloc(2 << 20, 7), mode: 0o640 },
      // bits a usual umask takes away: given after the create
      { name: 'workspace/shared.txt', body: 'all may write\n', mode: 0o666 },
      { name: 'workspace/open.sh', body: 'echo all\n', mode: 0o777 },
    ];
    expect(
      await exportWorkspace(
        engineWith(async () => Readable.from([await tarOf(items)])),
        runDir,
        'c1',
      ),
    ).to.deep.equal({ done: true, truncated: false });
    const ws = path.join(runDir, WORKSPACE.dir);
    const modes = Object.fromEntries(
      ['locked.txt', 'none.txt', 'ro.sh', 'big.bin', 'new.txt', 'shared.txt', 'open.sh'].map((f) => [f, statSync(path.join(ws, 'files', f)).mode & 0o777]),
    );
    expect(modes).to.deep.equal({
      'locked.txt': 0o200,
      'none.txt': 0o020,
      'ro.sh': 0o555,
      'big.bin': 0o640,
      'new.txt': 0o755,
      'shared.txt': 0o666,
      'open.sh': 0o777,
    });
    // the probe of what the umask keeps is gone
    expect(readdirSync(path.join(ws, 'files')).filter((n) => n.startsWith('.mode-probe'))).to.deep.equal([]);
    const patch = readFileSync(path.join(ws, WORKSPACE.patch), 'utf8');
    expect(patch).to.include('+write only\n');
    expect(patch).to.include('+no owner bits\n');
    expect(patch).to.include('diff --git a/ro.sh b/ro.sh\nnew file mode 100755\n');
  });

  it("reads the fixture's .gitignore files as git does: nested, negation, folder-only and anchored patterns; not one the attempt wrote; gitignore: false reads none", async () => {
    const IGNORE = '.pytest_cache/\n*.log\n!keep.log\n/build\n';
    const SUB = 'out/\n!*.log\n';
    const withIgnores = async (settings: Partial<WorkspaceBase['settings']> = {}) => {
      const s = await setup(settings);
      await fsp.writeFile(path.join(s.fx, '.gitignore'), IGNORE);
      await fsp.writeFile(path.join(s.fx, 'src', '.gitignore'), SUB);
      const base = JSON.parse(readFileSync(path.join(s.runDir, WORKSPACE.base), 'utf8')) as WorkspaceBase;
      await writeWorkspaceBase(s.runDir, { ...base, entries: [...base.entries, file('.gitignore', IGNORE), file('src/.gitignore', SUB)] });
      return s;
    };
    const items: Item[] = [
      ...WORKSPACE_TAR,
      { name: 'workspace/.gitignore', body: IGNORE },
      { name: 'workspace/.pytest_cache/', type: 'directory' },
      { name: 'workspace/.pytest_cache/v/cache/nodeids', body: '[]' },
      { name: 'workspace/run.log', body: 'noise\n' },
      { name: 'workspace/keep.log', body: 'kept\n' },
      { name: 'workspace/build', body: 'a file named build, at the top\n' },
      { name: 'workspace/src/.gitignore', body: SUB },
      { name: 'workspace/src/build', body: 'not at the top: kept\n' },
      { name: 'workspace/src/out/', type: 'directory' },
      { name: 'workspace/src/out/x.txt', body: 'ignored with its folder\n' },
      { name: 'workspace/src/trace.log', body: 're-included below src\n' },
      // an attempt's own .gitignore hides nothing
      { name: 'workspace/src/new/', type: 'directory' },
      { name: 'workspace/src/new/.gitignore', body: '*\n' },
      { name: 'workspace/src/new/hidden.py', body: 'x = 2\n' },
    ];
    const engine = engineWith(async () => Readable.from([await tarOf(items)]));
    const { runDir } = await withIgnores();
    await exportWorkspace(engine, runDir, 'c1');
    const changes = JSON.parse(readFileSync(path.join(runDir, WORKSPACE.dir, WORKSPACE.changes), 'utf8')) as WorkspaceChanges;
    expect(changes.added.map((e) => e.path)).to.deep.equal([
      'keep.log',
      'new.txt',
      'src/build',
      'src/new',
      'src/new/.gitignore',
      'src/new/hidden.py',
      'src/trace.log',
    ]);
    expect(changes.omitted.filter((o) => o.reason === 'excluded').map((o) => o.path)).to.have.members(['.pytest_cache', 'run.log', 'build', 'src/out']);
    // off: every one of them comes home
    await fsp.rm(tmp, { recursive: true, force: true });
    await fsp.mkdir(tmp, { recursive: true });
    const off = await withIgnores({ gitignore: false });
    await exportWorkspace(engine, off.runDir, 'c1');
    const all = JSON.parse(readFileSync(path.join(off.runDir, WORKSPACE.dir, WORKSPACE.changes), 'utf8')) as WorkspaceChanges;
    expect(all.added.map((e) => e.path)).to.include.members(['.pytest_cache', '.pytest_cache/v/cache/nodeids', 'run.log', 'build', 'src/out/x.txt']);
    expect(all.omitted.filter((o) => o.reason === 'excluded')).to.deep.equal([]);
  });

  it('a fixture changed on the host since the copy: the file is named, not diffed against the new bytes', async () => {
    const { runDir, fx } = await setup();
    await fsp.writeFile(path.join(fx, 'a.txt'), 'changed on the host\n');
    await exportWorkspace(
      engineWith(async () => Readable.from([await tarOf(WORKSPACE_TAR)])),
      runDir,
      'c1',
    );
    const patch = readFileSync(path.join(runDir, WORKSPACE.dir, WORKSPACE.patch), 'utf8');
    expect(patch).to.include('Binary files a/a.txt and b/a.txt differ\n');
    expect(patch).to.not.include('changed on the host');
  });

  it('a half-made export (berth killed) is removed and made again, exactly one complete export', async () => {
    const { runDir } = await setup();
    // the first try dies mid-stream: the temp folder stays, no workspace/
    const broken = engineWith(async () => {
      const whole = await tarOf(WORKSPACE_TAR);
      return Readable.from(
        (async function* () {
          yield whole.subarray(0, 1536);
          throw new Error('berth killed');
        })(),
      );
    });
    const err = await exportWorkspace(broken, runDir, 'c1').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(err)).to.include('berth killed');
    // as a kill would leave it: a temp folder (the finally of a killed process never runs)
    await fsp.mkdir(path.join(runDir, `${WORKSPACE.tempPrefix}999-abc`, 'files'), { recursive: true });
    expect(
      await exportWorkspace(
        engineWith(async () => Readable.from([await tarOf(WORKSPACE_TAR)])),
        runDir,
        'c1',
      ),
    ).to.deep.equal({ done: true, truncated: false });
    expect((await fsp.readdir(runDir)).sort()).to.deep.equal([WORKSPACE.dir, WORKSPACE.base]);
  });

  it('a container already gone is a warning, never a failure; export: none writes nothing', async () => {
    const { runDir } = await setup();
    const gone = engineWith(async () => {
      throw Object.assign(new Error('no such container'), { statusCode: 404 });
    });
    const r = await exportWorkspace(gone, runDir, 'c1');
    expect(r.done).to.equal(false);
    expect(r.done === false && r.warning).to.match(/not exported: the container/);
    const none = await setup({ export: 'none' }).catch(async () => {
      await fsp.rm(path.join(tmp, 'run-1'), { recursive: true });
      return setup({ export: 'none' });
    });
    expect(await exportWorkspace(gone, none.runDir, 'c1')).to.deep.equal({ done: false });
    expect(await fsp.readdir(none.runDir)).to.deep.equal([WORKSPACE.base]);
  });
});
