/** The grader's input tree (grade-archive.ts compose): fixture, changes less protect, grade fixture; hostile export entries left out. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar-stream';
import { compose, graderArchive, linkStaysInside, safeParts } from '../../../src/execute/grade-archive';
import type { WorkspaceChanges } from '../../../src/execute/workspace-types';

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

describe('execute/grade-archive compose', () => {
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

describe('execute/grade-archive packing, as the engine reads it', () => {
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
