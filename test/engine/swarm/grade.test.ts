/**
 * The workspace export and spec.grade on a real two-node swarm (test/support/swarm.ts): the
 * attempt's run edits its fixture on a node; its `run-1/workspace/` is read out of that node
 * (its engine's archive API) and lists exactly the edits; a grader, a fresh run of its own on a
 * node (its input put in through that node's engine, its results brought home), scores them with
 * the protected tests restored; a changed grader grades the same run again without starting any
 * attempt container, keeping the first grade; clean leaves nothing on the swarm. The attempt runs
 * as spec.user, and so does its grader (the attempt's image): both write their results volumes.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import Dockerode from 'dockerode';
import { extract } from 'tar-stream';
import { createSwarmBackend } from '../../../src/backend/swarm';
import { COMPONENTS, graderName, LABELS } from '../../../src/constants';
import { classify } from '../../../src/engine/errors';
import { createSwarmEngine } from '../../../src/engine/swarm';
import type { WorkspaceChanges } from '../../../src/workspace/types';
import type { AttemptStatus, GradeRecord } from '../../../src/status/types';
import { containerEvents, type PastEvent } from '../../support/events';
import { Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm, swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';

/** A set of one child with a fixture, a grade and the score the grader alone writes. */
function gradedSet(grade: string): string {
  return `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: g
spec:
  matrix:
    seed: ['0']
  template:
    image: berth/busybox:local
    user: '1000:1000'
    command: [sh, -c, ${JSON.stringify(ATTEMPT)}]
    fixture: ./task
    grade:
${grade
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
  score: {file: score.json, pass: 1}
`;
}

// The attempt fixes the solution, adds a file, deletes one, makes its visible test always pass
// (protect restores it) and writes a passing score of its own (ignored: the grader's counts).
const ATTEMPT = [
  'echo right > solution.txt',
  'mkdir -p notes && echo added-on-the-node > notes/added.txt',
  'rm old.txt',
  "echo 'exit 0' > tests/check.sh",
  'echo 1 > /results/score.json',
].join(' && ');
// The hidden test (grade.fixture): the solution must say "right" and the visible test, as the fixture has it, pass.
const HIDDEN_TEST =
  'if sh tests/check.sh && test -f notes/added.txt && ! test -e old.txt; then echo 1 > /results/score.json; else echo 0 > /results/score.json; fi; echo graded-on-a-node\n';
const GRADE = "command: [sh, -c, 'sh tests/hidden/test.sh']\nfixture: ./hidden\nprotect: ['tests/**']";
const REGRADE =
  "command: [sh, -c, 'cat solution.txt notes/added.txt tests/check.sh > /results/seen.txt; echo 0.5 > /results/score.json']\nprotect: ['tests/**']";

/** Container events `action` of the instance on every node of the swarm since `since` (seconds). */
async function nodeEvents(s: TestSwarm, instance: string, since: number, action: string): Promise<PastEvent[]> {
  return (await Promise.all(s.nodes.map((n) => containerEvents(instance, since, action, n.docker)))).flat();
}

describe('--backend swarm: the workspace comes home and a grader judges it (real two-node swarm)', function () {
  this.timeout(300_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it("exports the attempt's edits from its node, grades them in a fresh run on a node, and grades again without the attempt", async () => {
    const sb = await Sandbox.create('sw-grade');
    try {
      await sb.write('task/solution.txt', 'wrong\n');
      await sb.write('task/old.txt', 'to be deleted\n');
      await sb.write('task/tests/check.sh', 'grep -q right solution.txt\n');
      await sb.write('hidden/tests/hidden/test.sh', HIDDEN_TEST);
      await sb.write('g.yaml', gradedSet(GRADE));
      const since = Math.floor(Date.now() / 1000) - 1;
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait');
      const st = (await sb.status('g-0')) as AttemptStatus;
      expect(r.code, `${r.stderr}\n${JSON.stringify(st, null, 1)}`).to.equal(0);
      expect(st.phase, JSON.stringify(st)).to.equal('Succeeded');
      expect(st.warnings ?? [], 'the export warned').to.deep.equal([]);

      // the workspace came home from the attempt's node: exactly its edits
      const runDir = path.dirname(st.resultsDir as string);
      const changes = JSON.parse(await fs.readFile(path.join(runDir, 'workspace', 'changes.json'), 'utf8')) as WorkspaceChanges;
      expect(changes.workingDir).to.equal('/workspace');
      expect(changes.modified.map((e) => e.path).sort()).to.deep.equal(['solution.txt', 'tests/check.sh']);
      expect(changes.added.filter((e) => e.type === 'file').map((e) => e.path)).to.deep.equal(['notes/added.txt']);
      expect(changes.deleted).to.deep.equal([{ path: 'old.txt', type: 'file' }]);
      expect(changes.omitted).to.deep.equal([]);
      expect(await fs.readFile(path.join(runDir, 'workspace', 'files', 'notes', 'added.txt'), 'utf8')).to.equal('added-on-the-node\n');
      expect(await fs.readFile(path.join(runDir, 'workspace', 'changes.patch'), 'utf8')).to.match(/^\+right$/m);

      // the grader's verdict, from its own results brought home from its node
      const [g, ...more] = st.grades ?? [];
      expect(more).to.have.length(0);
      expect(g, JSON.stringify(g)).to.include({ k: 1, run: 1, state: 'graded', score: 1, passed: true, exitCode: 0 });
      expect(g?.notes?.join('\n')).to.match(/attempt's own score\.json is ignored/);
      expect((await fs.readFile(path.join(runDir, 'grade-1', 'results', 'score.json'), 'utf8')).trim()).to.equal('1');
      expect(await fs.readFile(path.join(runDir, 'grade-1', 'logs.txt'), 'utf8')).to.include('graded-on-a-node');
      // a fresh run of its own, on a node of the swarm, never the attempt's
      const [graderRun, graderNode] = (g?.containerId ?? '').split('@');
      expect(graderRun).to.equal(graderName(sb.instance, 'g-0', 1, 1));
      expect(s.nodes.map((n) => n.id)).to.include(graderNode);
      expect(g?.containerId).to.not.equal(st.containerId);
      // the image it ran, by id (the task reports its service's reference; recorded as the id it names, the attempt's)
      expect(g?.imageId).to.match(/^sha256:[0-9a-f]{64}$/);
      expect(g?.imageId).to.equal(st.image?.id);
      const started = await nodeEvents(s, sb.instance, since, 'start');
      expect(started.map((e) => e.component).sort()).to.deep.equal([COMPONENTS.grader, COMPONENTS.main]);
      // the grader's run is gone once its grade is recorded
      const sw = createSwarmEngine(s.manager.docker);
      expect(await sw.services.list([`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=${COMPONENTS.grader}`])).to.deep.equal([]);

      // a changed grader grades the same run again, from its exported changes: no attempt container starts
      const t0 = Date.now();
      await sb.write('g.yaml', gradedSet(REGRADE));
      const again = await swarmCli(sb, s, 'reconcile', '--once', '--wait');
      expect(again.code, again.stderr).to.equal(3); // 0.5 < pass 1: a task failure
      const after = (await sb.status('g-0')) as AttemptStatus;
      expect(after.run).to.equal(1);
      const gs: GradeRecord[] = after.grades ?? [];
      expect(gs.map((x) => [x.k, x.run, x.state, x.score, x.passed])).to.deep.equal([
        [1, 1, 'graded', 1, true],
        [2, 1, 'graded', 0.5, false],
      ]);
      expect(await fs.readFile(path.join(runDir, 'grade-2', 'results', 'seen.txt'), 'utf8')).to.equal('right\nadded-on-the-node\ngrep -q right solution.txt\n');
      const restarted = (await nodeEvents(s, sb.instance, Math.floor(t0 / 1000) - 1, 'start')).filter((e) => e.time >= t0);
      expect(restarted.map((e) => e.component)).to.deep.equal([COMPONENTS.grader]);

      // the backend reads a path out of a run on its node as the engine contract says: a path
      // that is not there is 404, and so is the run once clean removed it
      const backend = createSwarmBackend({ docker: new Dockerode({ socketPath: s.manager.socket }), env: { ...process.env, DOCKER_HOST: s.manager.address } });
      const read = (p: string) =>
        backend.containers.getArchive!(st.containerId as string, p).then(
          async (tar) => {
            const names: string[] = [];
            const ex = extract();
            const reading = (async () => {
              for await (const e of ex) {
                names.push(e.header.name);
                e.resume();
              }
            })();
            tar.pipe(ex);
            await reading;
            return names.sort();
          },
          (err: unknown) => classify(err),
        );
      expect(await read('/workspace/notes')).to.deep.equal(['notes/', 'notes/added.txt']);
      expect(await read('/workspace/no-such-path')).to.equal('not-found');
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      expect(await read('/workspace')).to.equal('not-found');
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await nothingLeftOnSwarm(s, sb.instance);
      await sb.dispose();
    }
  });
});
