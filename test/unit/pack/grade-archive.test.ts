/**
 * The grader's input tree (grade-archive.ts compose): fixture, changes less protect, grade fixture;
 * hostile export entries left out. Packed from the fixture's packed layers (the fixture cache) or
 * file by file, the grader's working dir ends the same.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar-stream';
import { createHash } from 'node:crypto';
import { fixtureCacheStats } from '../../../src/pack/fixture-cache';
import { compose, graderArchive, linkStaysInside, safeParts } from '../../../src/pack/grade-archive';
import type { WorkspaceChanges } from '../../../src/workspace/types';
import { fixtureDigest } from '../../../src/spec/fixture-digest';
import { scanFixture } from '../../../src/spec/fixture-scan';

type Tree = Parameters<typeof compose>[0];
type Node = Tree extends Map<string, infer N> ? N : never;
const file = (rel: string) => ({ type: 'file' as const, mode: 0o644, src: { from: 'tree' as const, root: '/fx', rel } });
const dir = { type: 'dir' as const, mode: 0o755 };
const fixture = (): Tree =>
  new Map<string, Node>([
    ['solution.txt', file('solution.txt')],
    ['tests', dir],
    ['tests/check.sh', file('tests/check.sh')],
  ]);
const changes = (over: Partial<WorkspaceChanges>): WorkspaceChanges => ({
  version: 1,
  workingDir: '/workspace',
  fixtureDigest: null,
  added: [],
  modified: [],
  deleted: [],
  typeChanged: [],
  omitted: [],
  truncated: false,
  caps: { maxBytes: 1, maxFiles: 1 },
  exportedAt: '2026-01-01T00:00:00Z',
  ...over,
});
const summary = (t: Tree) => [...t].map(([p, n]) => `${p}:${n.type}${n.src ? `<${n.src.from}` : ''}${n.target ? `->${n.target}` : ''}`).sort();

describe('pack/grade-archive compose', () => {
  it('lays the changes over the fixture, and the grade fixture over all', () => {
    const { tree, notes } = compose(
      fixture(),
      changes({ modified: [{ path: 'solution.txt', type: 'file' }], added: [{ path: 'src/new.py', type: 'file' }], deleted: [{ path: 'tests', type: 'dir' }] }),
      [],
      new Map([['tests/hidden.sh', file('tests/hidden.sh')]]),
      '/run/workspace/files',
    );
    expect(summary(tree)).to.deep.equal(['solution.txt:file<files', 'src/new.py:file<files', 'src:dir', 'tests/hidden.sh:file<tree', 'tests:dir']);
    expect(notes).to.deep.equal([]);
  });

  it('keeps the fixture where protect matches: modified, added and deleted protected paths', () => {
    const { tree, notes } = compose(
      fixture(),
      changes({
        modified: [{ path: 'tests/check.sh', type: 'file' }],
        added: [{ path: 'tests/extra.sh', type: 'file' }],
        deleted: [{ path: 'tests', type: 'dir' }],
      }),
      ['tests/**'],
      undefined,
      '/run/workspace/files',
    );
    expect(summary(tree)).to.deep.equal(['solution.txt:file<tree', 'tests/check.sh:file<tree', 'tests:dir']);
    expect(notes.join('\n')).to.match(/tests\/check\.sh: protected/);
  });

  it('a protected folder replaced by a file or a link keeps the fixture', () => {
    const { tree } = compose(
      fixture(),
      changes({ typeChanged: [{ path: 'tests', type: 'link', target: 'solution.txt', from: 'dir' }] }),
      ['tests/*.sh'],
      undefined,
      '/f',
    );
    expect(summary(tree)).to.include('tests/check.sh:file<tree');
  });

  it('leaves out hostile entries: .., absolute, empty, NUL, links leaving the tree, paths under links', () => {
    const { tree, notes } = compose(
      fixture(),
      changes({
        added: [
          { path: '../escape', type: 'file' },
          { path: '/etc/passwd', type: 'file' },
          { path: '', type: 'file' },
          { path: 'a/./b', type: 'file' },
          { path: 'x\0y', type: 'file' },
          { path: 'out', type: 'link', target: '../../etc' },
          { path: 'abs', type: 'link', target: '/etc/shadow' },
          { path: 'in', type: 'link', target: 'tests' },
          { path: 'in/sneak.sh', type: 'file' },
        ],
        deleted: [{ path: '../../important', type: 'file' }],
      }),
      [],
      undefined,
      '/f',
    );
    expect(summary(tree)).to.deep.equal(['in:link->tests', 'solution.txt:file<tree', 'tests/check.sh:file<tree', 'tests:dir']);
    expect(notes).to.have.length(9);
  });

  it('safeParts and linkStaysInside', () => {
    expect(safeParts('a/b')).to.deep.equal(['a', 'b']);
    for (const bad of ['', '/a', 'a/../b', './a', 'a//b', 'a/', 7]) expect(safeParts(bad), String(bad)).to.equal(undefined);
    expect(linkStaysInside(['a', 'l'], '../b')).to.equal(true);
    expect(linkStaysInside(['l'], '../b')).to.equal(false);
    expect(linkStaysInside(['l'], '/b')).to.equal(false);
  });
});

describe('pack/grade-archive packing, as the engine reads it', () => {
  let root: string;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-grade-pack-'));
    await fs.mkdir(path.join(root, 'fx', 'src'), { recursive: true });
    for (let i = 0; i < 40; i++) await fs.writeFile(path.join(root, 'fx', 'src', `f${String(i).padStart(2, '0')}.txt`), `file ${i}\n`.repeat(2000));
    await fs.mkdir(path.join(root, 'run'));
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });
  const input = () =>
    graderArchive({ runDir: path.join(root, 'run'), fixture: [path.join(root, 'fx')], gradeFixture: null, protect: [], workingDir: '/workspace', owner: null });
  const names = async (body: NodeJS.ReadableStream): Promise<string[]> => {
    const ex = extract();
    const out: string[] = [];
    const read = (async () => {
      for await (const e of ex) {
        out.push(e.header.name);
        e.resume();
      }
    })();
    await pipeline(body, ex);
    await read;
    return out;
  };

  it('streams the whole tree; each pack() packs it anew', async () => {
    const g = await input();
    expect(g.workspace).to.equal('missing');
    for (let i = 0; i < 2; i++) {
      const packing = g.pack();
      const got = await names(packing.body);
      await packing.done;
      expect(got).to.have.length(42);
      expect(got.slice(0, 3)).to.deep.equal(['workspace/', 'workspace/src/', 'workspace/src/f00.txt']);
    }
  });

  it('a file that became a link after the tree was composed: the body ends with the error, done rejects, nothing follows the link', async () => {
    const g = await input();
    await fs.rm(path.join(root, 'fx', 'src', 'f20.txt'));
    await fs.symlink('/etc/passwd', path.join(root, 'fx', 'src', 'f20.txt'));
    const packing = g.pack();
    const done = packing.done.then(
      () => 'resolved',
      (e: unknown) => String(e),
    );
    const got = names(packing.body).then(
      () => 'read to its end',
      (e: unknown) => String(e),
    );
    expect(await done).to.match(/f20\.txt/);
    expect(await got).to.not.equal('read to its end');
  });

  it('a reader that gave up ends the packing: stop() reads what is left to nowhere; a body destroyed mid-way ends it too', async () => {
    const g = await input();
    const stopped = g.pack();
    await new Promise((r) => stopped.body.once('readable', r));
    stopped.body.read();
    stopped.stop();
    await stopped.done;
    // the engine's request ended: its body destroyed while entries are in flight
    const cut = g.pack();
    for await (const _ of cut.body) break;
    cut.stop();
    await cut.done;
  });
});

/**
 * A grader's working dir as an extraction at / would leave it (the engine's archive API): entries
 * in order, a later one over an earlier one, a missing parent made (0755, root), a folder entry
 * over a folder setting its mode and owner; an entry that would put a file where a folder is, or
 * the reverse, is refused (the copy asks the engine for noOverwriteDirNonDir).
 */
async function extracted(body: NodeJS.ReadableStream): Promise<Map<string, string>> {
  const ex = extract();
  const tree = new Map<string, { type: string; mode: number; own: string; sha?: string; link?: string }>();
  const read = (async () => {
    for await (const e of ex) {
      const h = e.header;
      const name = h.name.replace(/\/$/, '');
      const parts = name.split('/');
      for (let i = 1; i < parts.length; i++) {
        const up = parts.slice(0, i).join('/');
        if (!tree.has(up)) tree.set(up, { type: 'directory', mode: 0o755, own: '0:0' });
      }
      const was = tree.get(name);
      if (was && (was.type === 'directory') !== (h.type === 'directory')) throw new Error(`${name}: a ${h.type} over a ${was.type}`);
      const hash = createHash('sha256');
      for await (const c of e) hash.update(c as Buffer);
      const own = `${h.uid}:${h.gid}`;
      if (h.type === 'file') tree.set(name, { type: 'file', mode: h.mode ?? 0, own, sha: hash.digest('hex').slice(0, 16) });
      else if (h.type === 'symlink') tree.set(name, { type: 'symlink', mode: h.mode ?? 0, own, link: h.linkname ?? '' });
      else tree.set(name, { type: h.type, mode: h.mode ?? 0, own });
    }
  })();
  await pipeline(body, ex);
  await read;
  return new Map(
    [...tree].map(([p, n]) => [p, `${n.type} ${n.mode.toString(8)} ${n.own}${n.sha ? ` ${n.sha}` : ''}${n.link !== undefined ? ` -> ${n.link}` : ''}`]),
  );
}

describe('pack/grade-archive from the packed fixture layers', () => {
  let root: string;
  before(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-grade-packed-'));
    const put = async (rel: string, text: string, mode = 0o644) => {
      await fs.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
      await fs.writeFile(path.join(root, rel), text, { mode });
      await fs.chmod(path.join(root, rel), mode);
    };
    // layer one: files, folders, links; layer two over it: a file replaced, a folder put away by a file, a new folder
    for (const f of ['src/a.txt', 'src/b.txt', 'src/keep/x.txt', 'tests/t1.sh', 'tests/t2.sh', 'gone/y.txt', 'asdir', 'over/z.txt', 'big.bin'])
      await put(`l1/${f}`, f === 'big.bin' ? 'B'.repeat(3 * 1024 * 1024) : `${f} of layer one\n`);
    await fs.chmod(path.join(root, 'l1', 'tests', 't1.sh'), 0o755);
    await fs.chmod(path.join(root, 'l1', 'src'), 0o750);
    await fs.symlink('src/a.txt', path.join(root, 'l1', 'ln'));
    await put('l2/src/b.txt', 'b of layer two\n');
    await put('l2/over', 'a file where layer one has a folder\n');
    await put('l2/extra/e.txt', 'extra\n');
    // the grade fixture: a hidden test, and one in place of a protected test
    await put('hidden/hidden/h.sh', 'hidden\n', 0o755);
    await put('hidden/tests/t2.sh', "the grader's t2\n");
    // the run's export: changes of every kind, protected ones, hostile ones
    const files = path.join(root, 'run', 'workspace', 'files');
    for (const f of ['src/a.txt', 'new/n.txt', 'asdir/inner.txt', 'src/keep', 'tests/t1.sh', 'tests/added.sh', 'big.bin'])
      await put(path.join('run', 'workspace', 'files', f), `${f} as the attempt left it\n`);
    void files;
    const c: WorkspaceChanges = {
      version: 1,
      workingDir: '/workspace',
      fixtureDigest: null,
      added: [
        { path: 'new', type: 'dir', mode: 0o755 },
        { path: 'new/n.txt', type: 'file', mode: 0o644 },
        { path: 'asdir/inner.txt', type: 'file', mode: 0o600 },
        { path: 'tests/added.sh', type: 'file', mode: 0o755 },
        { path: 'l3', type: 'link', target: 'src/b.txt' },
        { path: 'bad', type: 'link', target: '../../etc/passwd' },
        { path: '../escape', type: 'file' },
      ],
      modified: [
        { path: 'src', type: 'dir', mode: 0o700 },
        { path: 'src/a.txt', type: 'file', mode: 0o640 },
        { path: 'tests/t1.sh', type: 'file', mode: 0o755 },
        { path: 'big.bin', type: 'file', mode: 0o644 },
      ],
      deleted: [
        { path: 'gone', type: 'dir' },
        { path: 'gone/y.txt', type: 'file' },
        { path: 'ln', type: 'link' },
      ],
      typeChanged: [
        { path: 'asdir', type: 'dir', mode: 0o711, from: 'file' },
        { path: 'src/keep', type: 'file', mode: 0o644, from: 'dir' },
      ],
      omitted: [],
      truncated: false,
      caps: { maxBytes: 1 << 30, maxFiles: 1000 },
      exportedAt: '2026-01-01T00:00:00Z',
    };
    await fs.writeFile(path.join(root, 'run', 'workspace', 'changes.json'), JSON.stringify(c));
  });
  after(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  const layer = async (name: string) => ({ path: path.join(root, name), digest: fixtureDigest((await scanFixture(path.join(root, name))).entries) });
  const input = async (packed: boolean, owner: { uid: number; gid: number } | null, layers = ['l1', 'l2']) => {
    const args = {
      runDir: path.join(root, 'run'),
      fixture: layers.map((l) => path.join(root, l)),
      gradeFixture: path.join(root, 'hidden'),
      protect: ['tests/**'],
      workingDir: '/work/space',
      owner,
    };
    if (!packed) return graderArchive(args);
    return graderArchive({ ...args, packed: { layers: await Promise.all(layers.map(layer)), cache: { dir: path.join(root, 'cache'), maxBytes: 1 << 30 } } });
  };
  const tree = async (packed: boolean, owner: { uid: number; gid: number } | null, layers?: string[]) => {
    const g = await input(packed, owner, layers);
    try {
      const packing = g.pack();
      const [t] = await Promise.all([extracted(packing.body), packing.done]);
      return { t, notes: g.notes };
    } finally {
      await g.dispose();
    }
  };

  it('ends as the tree packed file by file: the changes, protect, the grade fixture, folders replaced by files and the reverse, links', async () => {
    for (const owner of [null, { uid: 1234, gid: 4321 }]) {
      const plain = await tree(false, owner);
      const hits = fixtureCacheStats().hits;
      const packed = await tree(true, owner);
      // and again, now from the cache
      const again = await tree(true, owner);
      expect(fixtureCacheStats().hits).to.be.greaterThan(hits);
      expect(packed.notes).to.deep.equal(plain.notes);
      expect([...packed.t].sort()).to.deep.equal([...plain.t].sort());
      expect([...again.t].sort()).to.deep.equal([...plain.t].sort());
      const t = packed.t;
      const own = owner ? '1234:4321' : '0:0';
      expect(t.get('work/space/src')).to.equal(`directory 700 ${own}`);
      expect(t.get('work/space/src/a.txt')).to.match(new RegExp(`^file 640 ${own} `));
      expect(t.get('work/space/src/b.txt')).to.equal(plain.t.get('work/space/src/b.txt'));
      expect(t.get('work/space/src/keep')).to.match(/^file 644 /);
      expect(t.has('work/space/src/keep/x.txt')).to.equal(false);
      expect(t.get('work/space/asdir')).to.equal(`directory 711 ${own}`);
      expect(t.get('work/space/asdir/inner.txt')).to.match(/^file 600 /);
      expect(t.get('work/space/over')).to.match(/^file 644 /);
      expect(t.has('work/space/over/z.txt')).to.equal(false);
      expect(t.has('work/space/gone')).to.equal(false);
      expect(t.has('work/space/ln')).to.equal(false);
      expect(t.get('work/space/l3')).to.match(/-> src\/b\.txt$/);
      expect(t.has('work/space/bad')).to.equal(false);
      // protected: the fixture's t1 kept, the attempt's added test dropped; the grade fixture's t2 and hidden test over all
      expect(t.get('work/space/tests/t1.sh')).to.match(new RegExp(`^file 755 ${own} `));
      expect(t.has('work/space/tests/added.sh')).to.equal(false);
      expect(t.get('work/space/tests/t2.sh')).to.equal(plain.t.get('work/space/tests/t2.sh'));
      expect(t.get('work/space/hidden/h.sh')).to.match(/^file 755 /);
      expect(t.get('work/space')).to.equal(`directory 755 ${own}`);
    }
  });

  it("a packed layer is read as packed (the attempt's bytes, not a host file changed since); a packing stopped early ends; an unreadable layer fails it", async () => {
    const was = (await tree(false, null, ['l1'])).t.get('work/space/src/b.txt');
    const g = await input(true, null, ['l1']);
    const b = path.join(root, 'l1', 'src', 'b.txt');
    const text = await fs.readFile(b);
    try {
      await fs.writeFile(b, 'changed on the host\n');
      const stopped = g.pack();
      for await (const _ of stopped.body) break;
      stopped.stop();
      await stopped.done;
      const packing = g.pack();
      const [t] = await Promise.all([extracted(packing.body), packing.done]);
      expect(t.get('work/space/src/b.txt')).to.equal(was);
    } finally {
      await fs.writeFile(b, text);
      await g.dispose();
    }
    // its handle closed: the ranges cannot be read, the body ends with the error and done rejects
    const gone = g.pack();
    const done = gone.done.then(
      () => 'resolved',
      (e: unknown) => String(e),
    );
    const got = extracted(gone.body).then(
      () => 'read to its end',
      (e: unknown) => String(e),
    );
    expect(await done).to.match(/EBADF|closed/i);
    expect(await got).to.not.equal('read to its end');
  });
});
