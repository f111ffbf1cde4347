/**
 * Fixture layers on the real engine: a set of 4 children (started at once) shares one base
 * layer (a repository) plus a layer of its own (the task's files); every child's process sees
 * the later layer win (a file over the base's folder), the base packed once for all of them
 * (pack/fixture-cache.ts counts), the workspace export compares with the merged layers (a base
 * file edited shows in the patch against the base's bytes), the grader gets the layers then the
 * changes; a cache entry removed is packed again and works. The same at 12 children, on the
 * fake engine: test/unit/pack/fixture-layers.test.ts.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, WORKSPACE } from '../../src/constants';
import { fixtureCacheStats } from '../../src/pack/fixture-cache';
import type { WorkspaceChanges } from '../../src/workspace/types';
import type { AttemptStatus } from '../../src/status/types';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const TASKS = 4;
const task = (i: number) => `t${String(i).padStart(2, '0')}`;

// Each child reads README (its own layer's), the base's lib.py and data/ (a folder its layer replaces with a file), then edits lib.py.
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
    command: [sh, -c, 'cat README > /results/readme.txt && cat src/lib.py > /results/lib.txt && cat data > /results/data.txt && echo "y = 2" >> src/lib.py && echo 1 > /results/score.json']
    grade:
      command: [sh, -c, 'grep -q "y = 2" src/lib.py && grep -q "^task" README && [ -f data ] && echo 1 > /results/score.json || echo 0 > /results/score.json']
  score: {file: score.json, pass: 1}
`;

describe('fixture layers (real engine)', function () {
  this.timeout(240_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('layers');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  const cacheDir = () => path.join(sb.stateDir, DEFAULTS.fixtureCacheDir);
  const entries = async () => (await fs.readdir(cacheDir())).filter((n) => /^[0-9a-f]{64}$/.test(n));
  const runDir = (name: string) => path.join(sb.resultsRoot, name, 'run-1');
  const read = (name: string, file: string) => fs.readFile(path.join(runDir(name), 'results', file), 'utf8');

  it('4 children over one base layer: the later layer wins, the base is packed once, the export and the grader see the merged layers', async function () {
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
    expect(await entries()).to.have.length(TASKS + 1);

    for (let i = 1; i <= TASKS; i++) {
      const name = `layered-${task(i)}`;
      const st = (await sb.status(name)) as AttemptStatus;
      expect(st.phase, name).to.equal('Succeeded');
      expect(await read(name, 'readme.txt'), name).to.equal(`task ${i}\n`);
      expect(await read(name, 'lib.txt'), name).to.equal('x = 1\n');
      expect(await read(name, 'data.txt'), name).to.equal(`data of ${i}\n`);
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

  it('a cache entry removed is packed again on its next use, and a new child reuses the base kept on disk', async function () {
    await sb.write('repo/README', 'the repository\n');
    await sb.write('repo/src/lib.py', 'x = 1\n');
    await sb.write('repo/data', 'base data\n');
    await sb.write(`tasks/${task(1)}/README`, 'task 1\n');
    await sb.write(`tasks/${task(1)}/data`, 'data of 1\n');
    await sb.write('layered.yaml', SET);
    const s0 = fixtureCacheStats();
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    expect(fixtureCacheStats().packs - s0.packs).to.equal(2);

    // a new task: only its own layer is packed, the base is read from the cache
    await sb.write(`tasks/${task(2)}/README`, 'task 2\n');
    await sb.write(`tasks/${task(2)}/data`, 'data of 2\n');
    const s1 = fixtureCacheStats();
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    expect(fixtureCacheStats().packs - s1.packs).to.equal(1);
    expect(await read(`layered-${task(2)}`, 'readme.txt')).to.equal('task 2\n');

    // every entry removed: the next child packs the base and its layer again, and runs as the others did
    for (const e of await entries()) await fs.rm(path.join(cacheDir(), e), { recursive: true });
    await sb.write(`tasks/${task(3)}/README`, 'task 3\n');
    await sb.write(`tasks/${task(3)}/data`, 'data of 3\n');
    const s2 = fixtureCacheStats();
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    expect(fixtureCacheStats().packs - s2.packs).to.equal(2);
    expect(await read(`layered-${task(3)}`, 'readme.txt')).to.equal('task 3\n');
    expect(await read(`layered-${task(3)}`, 'lib.txt')).to.equal('x = 1\n');
    expect(await entries()).to.have.length(2);
  });
});
