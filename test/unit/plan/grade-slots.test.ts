/**
 * Graders take slots (issue 56): a grade that makes a grader takes a --max-running slot and a room
 * of its set's maxParallel, as a run does; a running grader holds one; a grade that finds none
 * waits for one, flagged for the controller, recording nothing. No engine.
 */
import { expect } from 'chai';
import { COMPONENTS, LABELS, REASONS, graderName } from '../../../src/constants';
import { plan } from '../../../src/plan/planner';
import type { AttemptAction } from '../../../src/plan/types';
import { gradeHash } from '../../../src/spec/grade-hash';
import type { LoadedSpec, NormalizedGrade, SetPolicy } from '../../../src/spec/types';
import type { AttemptStatus, GradeRecord } from '../../../src/status/types';
import { container, input, snapshot, spec, status, statuses } from '../../support/builders';

const G: NormalizedGrade = {
  image: null,
  command: ['sh', '-c', 'exit 0'],
  env: {},
  fixture: null,
  fixtureDigest: null,
  protect: [],
  deadlineSeconds: 60,
  resources: { cpus: null, memoryBytes: null, pids: 512 },
  network: { mode: 'none' },
  when: 'always',
};
const policy = (over: Partial<SetPolicy> = {}): SetPolicy => ({
  name: 'set',
  axes: ['x'],
  maxParallel: null,
  failFast: false,
  maxFailed: null,
  infra: [],
  score: null,
  source: { file: 'specs/set.yaml', line: 1, col: 1 },
  ...over,
});
const graded = (name: string, set?: SetPolicy, index = 0): LoadedSpec => ({
  ...spec(name, { grade: G }),
  ...(set ? { set: { set, coords: { x: String(index) }, index } } : {}),
});
const done = (name: string, over: Partial<AttemptStatus> = {}) =>
  status(name, { phase: 'Succeeded', reason: REASONS.completed, exitCode: 0, finishedAt: '2026-01-01T00:00:10.000Z', ...over });
const grading = (over: Partial<GradeRecord> = {}): GradeRecord => ({
  k: 1,
  run: 1,
  gradeHash: gradeHash(G),
  state: 'grading',
  resultsDir: '/r/x/run-1/grade-1/results',
  image: 'berth/busybox:local',
  createdAt: '2026-01-01T00:00:20.000Z',
  ...over,
});
const exited = (name: string) => container('default', name, `h-${name}`, { id: `id-${name}`, state: 'exited' });
const running = (name: string) => container('default', name, `h-${name}`, { id: `id-${name}` });
const graderOf = (name: string, state: string) =>
  container('default', name, `h-${name}`, {
    id: `grader-${name}`,
    name: graderName('default', name, 1, 1),
    state,
    labels: { ...container('default', name, `h-${name}`).labels, [LABELS.component]: COMPONENTS.grader, [LABELS.grade]: '1' },
  });
const makesGrader = (a: AttemptAction | undefined) => (a?.ops ?? []).some((o) => o.type === 'create-grader');
const byName = (actions: AttemptAction[]) => new Map(actions.map((a) => [a.attempt, a]));

describe('planner: graders take slots', function () {
  it('a grade that makes a grader takes a slot; the ones that find none wait for one, recording nothing', function () {
    const names = ['a', 'b', 'c'];
    const p = plan(
      input({
        specs: names.map((n) => graded(n)),
        statuses: statuses(...names.map((n) => done(n))),
        snapshot: snapshot({ containers: names.map(exited) }),
        maxRunning: 2,
      }),
    );
    const at = byName(p.actions);
    expect(makesGrader(at.get('a')) && makesGrader(at.get('b'))).to.equal(true);
    expect(at.get('a')).to.include({ kind: 'grade', takesSlot: true });
    const c = at.get('c');
    expect(c).to.include({ kind: 'wait', waitsForSlot: true });
    expect(c?.ops).to.deep.equal([]);
    expect(c?.summary).to.match(/grader waits: no free slot \(--max-running 2\)/);
  });

  it('a running grader holds a slot (a new run waits for it); finishing a grade takes none', function () {
    const p = plan(
      input({
        specs: [graded('a'), spec('b')],
        statuses: statuses(done('a', { grades: [grading({ containerId: 'grader-a', startedAt: '2026-01-01T00:00:21.000Z' })] })),
        snapshot: snapshot({ containers: [exited('a'), graderOf('a', 'running')] }),
        maxRunning: 1,
      }),
    );
    const at = byName(p.actions);
    expect(at.get('b')).to.include({ kind: 'wait', waitsForSlot: true });
    // the grader that exited is finished; its finish takes no slot
    const q = plan(
      input({
        specs: [graded('a')],
        statuses: statuses(done('a', { grades: [grading({ containerId: 'grader-a', startedAt: '2026-01-01T00:00:21.000Z' })] })),
        snapshot: snapshot({ containers: [exited('a'), graderOf('a', 'exited')] }),
        maxRunning: 1,
      }),
    );
    expect(q.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['finish-grade', 'remove-container']);
    expect(q.actions[0]).to.not.have.property('takesSlot');
  });

  it("graders count against their set's maxParallel, running ones and those made in this pass", function () {
    const set = policy({ maxParallel: 2 });
    const names = ['set-0', 'set-1', 'set-2', 'set-3'];
    const specs = names.map((n, i) => graded(n, set, i));
    // set-0's grader runs; set-1 and set-2 want one; set-3 has not run yet
    const p = plan(
      input({
        specs,
        statuses: statuses(
          done('set-0', { grades: [grading({ containerId: 'grader-set-0', startedAt: '2026-01-01T00:00:21.000Z' })] }),
          done('set-1'),
          done('set-2'),
        ),
        snapshot: snapshot({ containers: [exited('set-0'), graderOf('set-0', 'running'), exited('set-1'), exited('set-2')] }),
        maxRunning: 10,
      }),
    );
    const at = byName(p.actions);
    expect(makesGrader(at.get('set-1'))).to.equal(true);
    expect(at.get('set-2')).to.include({ kind: 'wait', waitsForSlot: true });
    expect(at.get('set-2')?.summary).to.match(/set set runs maxParallel 2/);
    expect(at.get('set-3')).to.include({ kind: 'wait', waitsForSlot: true });
  });

  it("slots held by a controller's actions in flight count for graders too", function () {
    const p = plan(
      input({
        specs: [graded('a')],
        statuses: statuses(done('a')),
        snapshot: snapshot({ containers: [exited('a')] }),
        maxRunning: 2,
        reservedSlots: 1,
      }),
    );
    expect(makesGrader(p.actions[0])).to.equal(true);
    // one run of another attempt runs too: no slot is left
    const q = plan(
      input({
        specs: [graded('a'), spec('z')],
        statuses: statuses(done('a'), status('z')),
        snapshot: snapshot({ containers: [exited('a'), running('z')] }),
        maxRunning: 2,
        reservedSlots: 1,
      }),
    );
    expect(byName(q.actions).get('a')).to.include({ kind: 'wait', waitsForSlot: true });
  });

  it('a grade under way whose grader is gone (berth stopped) is made again only with a slot', function () {
    const p = plan(
      input({
        specs: [graded('a'), spec('z')],
        statuses: statuses(done('a', { grades: [grading()] }), status('z')),
        snapshot: snapshot({ containers: [exited('a'), running('z')] }),
        maxRunning: 1,
      }),
    );
    expect(byName(p.actions).get('a')).to.include({ kind: 'wait', waitsForSlot: true });
  });
});
