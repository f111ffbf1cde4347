/**
 * Fixture layers through the whole command line on the fake engine: a set of 12 children shares
 * one base layer (a repository) plus a layer of its own; the base is packed once for all of them,
 * four at a time (pack/fixture-cache.ts counts), each child's run and grade pass, and the
 * workspace export compares with the merged layers (a base file edited shows in the patch
 * against the base's bytes). Each task and grader is the fake's (FakeEngine.runTasks). What the
 * container itself sees of the layers (the later one winning, a file over a folder) is on the
 * real engine: test/engine/fixture-layers.test.ts.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { COMPONENTS, DEFAULTS, LABELS, WORKSPACE } from '../../../src/constants';
import { fixtureCacheStats } from '../../../src/pack/fixture-cache';
import type { AttemptStatus } from '../../../src/status/types';
import type { WorkspaceChanges } from '../../../src/workspace/types';
import type { FakeTask } from '../../support/fake-engine';
import { FakeSandbox } from '../../support/fake-sandbox';

const TASKS = 12;
const task = (i: number) => `t${String(i).padStart(2, '0')}`;

// As in test/engine/fixture-layers.test.ts: each child edits the base's lib.py; its grader checks the edit.
const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: layered
spec:
  matrix:
    task: {fromDir: ./tasks}
  maxParallel: 4
  template:
    image: berth/busybox:local
    fixture: [./repo, './tasks/\${{ matrix.task }}']
    command: [sh, -c, 'echo "y = 2" >> src/lib.py && echo 1 > /results/score.json']
    grade:
      command: [sh, -c, 'grep -q "y = 2" src/lib.py && echo 1 > /results/score.json || echo 0 > /results/score.json']
  score: {file: score.json, pass: 1}
`;

describe('fixture layers (fake engine)', function () {
  let sb: FakeSandbox;
  beforeEach(async function () {
    sb = await FakeSandbox.create('layers');
    sb.fake.runTasks((c): FakeTask | undefined => {
      const text = (p: string) => c.tree.get(p)?.body.toString();
      if (c.labels[LABELS.component] === COMPONENTS.main) {
        // the task: lib.py as the layers put it in, edited
        return { code: 0, files: { '/workspace/src/lib.py': `${text('workspace/src/lib.py') ?? ''}y = 2\n`, '/results/score.json': '1\n' } };
      }
      if (c.labels[LABELS.component] === COMPONENTS.grader) {
        // the grader: the edit came home with the changes
        return { code: 0, files: { '/results/score.json': /y = 2/.test(text('workspace/src/lib.py') ?? '') ? '1\n' : '0\n' } };
      }
      return undefined;
    });
  });
  afterEach(async function () {
    await sb.dispose();
  });

  const runDir = (name: string) => path.join(sb.resultsRoot, name, 'run-1');

  it('12 children over one base layer: the base is packed once, each run and grade passes, the export sees the merged layers', async function () {
    await sb.write('repo/README', 'the repository\n');
    await sb.write('repo/src/lib.py', 'x = 1\n');
    await sb.write('repo/data/part1', 'p1\n');
    await sb.write('repo/data/part2', 'p2\n');
    await sb.write('repo/docs/big.txt', 'lorem ipsum\n'.repeat(50_000));
    for (let i = 1; i <= TASKS; i++) {
      await sb.write(`tasks/${task(i)}/README`, `task ${i}\n`);
      await sb.write(`tasks/${task(i)}/data`, `data of ${i}\n`);
    }
    await sb.write('layered.yaml', SET);

    const before = fixtureCacheStats();
    const r = await sb.cli('reconcile', '--once', '--wait', '--max-running', '4');
    expect(r.code, r.stderr).to.equal(0);
    const packed = fixtureCacheStats().packs - before.packs;
    expect(packed, 'the base once, each task layer once').to.equal(TASKS + 1);
    const entries = (await fs.readdir(path.join(sb.stateDir, DEFAULTS.fixtureCacheDir))).filter((n) => /^[0-9a-f]{64}$/.test(n));
    expect(entries).to.have.length(TASKS + 1);

    for (let i = 1; i <= TASKS; i++) {
      const name = `layered-${task(i)}`;
      const st = (await sb.status(name)) as AttemptStatus;
      expect(st.phase, name).to.equal('Succeeded');
      expect(st.grades?.[0], name).to.include({ state: 'graded', score: 1, passed: true });
    }
    // the export compares with the merged layers: lib.py (the base's) modified, diffed against the base's bytes; README (the task's) unchanged
    const name = `layered-${task(3)}`;
    const changes = JSON.parse(await fs.readFile(path.join(runDir(name), WORKSPACE.dir, WORKSPACE.changes), 'utf8')) as WorkspaceChanges;
    expect(changes.modified.map((e) => e.path)).to.deep.equal(['src/lib.py']);
    expect([changes.added, changes.deleted, changes.typeChanged]).to.deep.equal([[], [], []]);
    const patch = await fs.readFile(path.join(runDir(name), WORKSPACE.dir, WORKSPACE.patch), 'utf8');
    expect(patch).to.include(' x = 1\n+y = 2\n');
    const base = JSON.parse(await fs.readFile(path.join(runDir(name), WORKSPACE.base), 'utf8')) as {
      layers: string[];
      entries: { path: string; layer: number }[];
    };
    expect(base.layers.map((l) => path.relative(sb.specsDir, l))).to.deep.equal(['repo', `tasks/${task(3)}`]);
    expect(base.entries.filter((e) => ['README', 'data', 'src/lib.py'].includes(e.path)).map((e) => `${e.path}:${e.layer}`)).to.deep.equal([
      'README:1',
      'data:1',
      'src/lib.py:0',
    ]);
    expect(base.entries.some((e) => e.path.startsWith('data/'))).to.equal(false);
  });
});
