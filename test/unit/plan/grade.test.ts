/** The planner's grade decisions (plan/grade.ts through plan()): begin, finish, resume after a crash, deadline, regrade, leftovers. */
import { expect } from 'chai';
import { buildTag, COMPONENTS, LABELS, REASONS, graderName } from '../../../src/constants';
import type { ImageBuildState } from '../../../src/plan/build-gate';
import { plan } from '../../../src/plan/planner';
import { gradeHash } from '../../../src/spec/grade-hash';
import type { NormalizedGrade } from '../../../src/spec/types';
import type { GradeRecord } from '../../../src/status/types';
import { T0, container, input, snapshot, spec, status, statuses } from '../../support/builders';
import { imageIndex } from '../../../src/observe/images';

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
const loaded = (g: NormalizedGrade = G) => spec('a', { grade: g });
const done = (over = {}) => status('a', { phase: 'Succeeded', reason: 'Completed', exitCode: 0, finishedAt: '2026-01-01T00:00:10.000Z', ...over });
const grade = (over: Partial<GradeRecord> = {}): GradeRecord => ({
  k: 1,
  run: 1,
  gradeHash: gradeHash(G),
  state: 'grading',
  resultsDir: '/r/a/run-1/grade-1/results',
  image: 'berth/busybox:local',
  createdAt: '2026-01-01T00:00:20.000Z',
  ...over,
});
const grader = (k: number, state: string) =>
  container('default', 'a', 'h-a', {
    id: `grader-${k}`,
    name: graderName('default', 'a', 1, k),
    state,
    labels: { ...container('default', 'a', 'h-a').labels, [LABELS.component]: COMPONENTS.grader, [LABELS.grade]: String(k) },
  });
const main = container('default', 'a', 'h-a', { state: 'exited' });
const opsOf = (rec = done(), containers = [main], g = G) => {
  const p = plan(input({ specs: [loaded(g)], statuses: statuses(rec), snapshot: snapshot({ containers }) }));
  const a = p.actions.find((x) => x.attempt === 'a');
  return { a, types: (a?.ops ?? []).map((o) => o.type) };
};

describe('plan/grade', () => {
  it('a finished run with no grade: grade 1 begun, its grader made, filled and started', () => {
    const { a, types } = opsOf();
    expect(a?.kind).to.equal('grade');
    expect(types).to.deep.equal(['begin-grade', 'create-grader', 'copy-in-grader', 'start-grader']);
    const begin = a?.ops[0];
    if (begin?.type !== 'begin-grade') throw new Error('no begin-grade');
    expect(begin.fresh).to.equal(true);
    expect(begin.grader.k).to.equal(1);
    expect(begin.grader.resultsDir).to.equal('/r/a/run-1/grade-1/results');
    expect(begin.grader.container.create.host.networkMode).to.equal('none');
    expect(begin.grader.container.create.host.binds).to.deep.equal(['/r/a/run-1/grade-1/results:/results:rw']);
    expect(begin.grader.container.create.labels[LABELS.component]).to.equal(COMPONENTS.grader);
  });

  it('no grade for a run that never ran, nor a failed run under when: succeeded', () => {
    expect(opsOf(done({ phase: 'Failed', reason: 'StartFailed', startedAt: undefined })).types).to.not.include('begin-grade');
    expect(opsOf(done({ phase: 'Failed', reason: 'Error', exitCode: 1 }), [main], { ...G, when: 'succeeded' }).types).to.not.include('begin-grade');
    expect(opsOf(done({ phase: 'Failed', reason: 'Error', exitCode: 1 })).types).to.include('begin-grade');
  });

  it('a grader that exited: finished, then removed', () => {
    expect(
      opsOf(done({ grades: [grade({ containerId: 'grader-1', startedAt: '2026-01-01T00:00:21.000Z', deadlineAt: '2026-01-01T00:01:21.000Z' })] }), [
        main,
        grader(1, 'exited'),
      ]).types,
    ).to.deep.equal(['finish-grade', 'remove-container']);
  });

  it('crash-resume: a grade under way whose grader is gone is made again into the same k (its folder emptied)', () => {
    const { a, types } = opsOf(done({ grades: [grade()] }));
    expect(types).to.deep.equal(['begin-grade', 'create-grader', 'copy-in-grader', 'start-grader']);
    const begin = a?.ops[0];
    if (begin?.type !== 'begin-grade') throw new Error('no begin-grade');
    expect([begin.grader.k, begin.fresh]).to.deep.equal([1, false]);
  });

  it('crash-resume: a created grader is removed and made again; a running one whose start is not recorded is recorded', () => {
    expect(opsOf(done({ grades: [grade()] }), [main, grader(1, 'created')]).types).to.deep.equal([
      'remove-container',
      'begin-grade',
      'create-grader',
      'copy-in-grader',
      'start-grader',
    ]);
    expect(opsOf(done({ grades: [grade()] }), [main, grader(1, 'running')]).types).to.deep.equal(['start-grader']);
  });

  it('a grader running past its deadline is stopped: GradeTimedOut', () => {
    const { a, types } = opsOf(
      done({ grades: [grade({ containerId: 'grader-1', startedAt: '2026-01-01T00:00:00.000Z', deadlineAt: new Date(T0 - 1).toISOString() })] }),
      [main, grader(1, 'running')],
    );
    expect(types).to.deep.equal(['stop', 'finish-grade', 'remove-container']);
    const fin = a?.ops[1];
    expect(fin?.type === 'finish-grade' && fin.forced?.reason).to.equal('GradeTimedOut');
  });

  it('a grader running within its deadline: left, looked at again at the deadline', () => {
    const { a } = opsOf(
      done({ grades: [grade({ containerId: 'grader-1', startedAt: '2026-01-01T00:00:50.000Z', deadlineAt: new Date(T0 + 5000).toISOString() })] }),
      [main, grader(1, 'running')],
    );
    expect(a?.ops ?? []).to.deep.equal([]);
    expect(a?.requeueAfterMs).to.equal(5000);
  });

  it('a changed grader (new grade hash) grades the run again into k+1; a graded run of the current hash needs nothing', () => {
    const graded = grade({ state: 'graded', passed: true });
    expect(opsOf(done({ grades: [graded] })).types).to.deep.equal([]);
    const { a } = opsOf(done({ grades: [graded] }), [main], { ...G, command: ['sh', '-c', 'exit 1'] });
    const begin = a?.ops[0];
    if (begin?.type !== 'begin-grade') throw new Error('no begin-grade');
    expect([begin.grader.k, begin.fresh]).to.deep.equal([2, true]);
    expect(a?.ops.map((o) => o.type)).to.not.include('create-container');
  });

  it('berth regrade: the mark after the latest grade begins the next', () => {
    const graded = grade({ state: 'graded', passed: true });
    expect(opsOf(done({ grades: [graded], regradeRequested: { at: '2026-01-01T00:00:30.000Z', run: 1, after: 1 } })).types[0]).to.equal('begin-grade');
  });

  it('a grader left over from a finished grade is removed', () => {
    expect(opsOf(done({ grades: [grade({ state: 'graded', passed: true })] }), [main, grader(1, 'exited')]).types).to.deep.equal(['remove-container']);
  });

  it('grade.image not on the engine: the grade waits for its pull (asked for in the plan); once there, it begins', () => {
    const g = { ...G, image: 'reg.example:5000/grader:1' };
    const withImages = (tags: string[]) => ({
      ...snapshot({ containers: [main] }),
      images: imageIndex([{ id: `sha256:${'e'.repeat(64)}`, tags, labels: {}, repoDigests: [] }]),
    });
    const pulls = { states: new Map(), prefetch: 2 };
    const waiting = plan(input({ specs: [loaded(g)], statuses: statuses(done()), snapshot: withImages([]), pulls }));
    expect(waiting.actions.find((x) => x.attempt === 'a')?.kind).to.equal('wait');
    expect(waiting.pulls).to.deep.equal([{ ref: 'reg.example:5000/grader:1', attempts: ['a'], runs: ['a/grade#1'] }]);
    const ready = plan(input({ specs: [loaded(g)], statuses: statuses(done()), snapshot: withImages(['reg.example:5000/grader:1']), pulls }));
    expect(ready.actions.find((x) => x.attempt === 'a')?.kind).to.equal('grade');
    // Never: no pull, the grade goes on (its grader's create says what is missing)
    const never = plan(
      input({
        specs: [spec('a', { grade: g, pullPolicies: { main: 'IfNotPresent', grade: 'Never', sidecars: {} } })],
        statuses: statuses(done()),
        snapshot: withImages([]),
        pulls,
      }),
    );
    expect(never.actions.find((x) => x.attempt === 'a')?.kind).to.equal('grade');
    expect(never.pulls).to.equal(undefined);
  });

  it('grade.build: the grade waits for its grader’s image to be built (asked for in the plan); a failed build ends the grade GradeFailed; built, it begins', () => {
    const H = '3'.repeat(64);
    const b: NonNullable<NormalizedGrade['build']> = {
      context: '/specs/g',
      dockerfile: 'Dockerfile',
      args: {},
      target: null,
      network: false,
      hash: H,
      from: ['berth/busybox:local'],
    };
    const g: NormalizedGrade = { ...G, image: buildTag(H), build: b };
    const withBuilt = (label: string | undefined) => ({
      ...snapshot({ containers: [main] }),
      // the engine holds the build's FROM image (berth/busybox:local)
      images: imageIndex([
        { id: `sha256:${'e'.repeat(64)}`, tags: ['berth/busybox:local'], labels: {}, repoDigests: [] },
        ...(label === undefined ? [] : [{ id: `sha256:${'f'.repeat(64)}`, tags: [buildTag(H)], labels: { [LABELS.build]: label }, repoDigests: [] }]),
      ]),
    });
    const builds = (st?: ImageBuildState) => ({ states: new Map(st ? [[H, st]] : []), maxBuilds: 1 });
    const waiting = plan(input({ specs: [loaded(g)], statuses: statuses(done()), snapshot: withBuilt(undefined), builds: builds() }));
    expect(waiting.actions.find((x) => x.attempt === 'a')?.kind).to.equal('wait');
    expect(waiting.builds?.map((r) => [r.tag, r.attempts])).to.deep.equal([[buildTag(H), ['a']]]);
    // a tag without its hash's label is not the grader's image
    expect(plan(input({ specs: [loaded(g)], statuses: statuses(done()), snapshot: withBuilt('other'), builds: builds() })).builds?.length).to.equal(1);
    const failed = plan(
      input({
        specs: [loaded(g)],
        statuses: statuses(done()),
        snapshot: withBuilt(undefined),
        builds: builds({ failed: { at: 1, message: 'step 2/3 failed' } }),
      }),
    );
    const f = failed.actions.find((x) => x.attempt === 'a');
    expect(f?.kind).to.equal('grade');
    expect((f?.ops ?? []).map((o) => o.type)).to.deep.equal(['begin-grade', 'finish-grade']);
    const fin = f?.ops[1];
    if (fin?.type !== 'finish-grade') throw new Error('no finish-grade');
    expect(fin.forced?.reason).to.equal(REASONS.gradeFailed);
    expect(failed.builds).to.equal(undefined);
    const ready = plan(input({ specs: [loaded(g)], statuses: statuses(done()), snapshot: withBuilt(H), builds: builds() }));
    const r = ready.actions.find((x) => x.attempt === 'a');
    expect(r?.kind).to.equal('grade');
    const begin = r?.ops[0];
    if (begin?.type !== 'begin-grade') throw new Error('no begin-grade');
    expect(begin.grader.container.create.image).to.equal(buildTag(H));
  });
});
