/** The grader's input tree (grade-archive.ts compose): fixture, changes less protect, grade fixture; hostile export entries left out. */
import { expect } from 'chai';
import { compose, linkStaysInside, safeParts } from '../../../src/execute/grade-archive';
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
