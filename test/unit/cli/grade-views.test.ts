/** How grades show (spec.grade): their words, `get`'s GRADE column (and -o wide's GRADER), the summary's count by grade. */
import { expect } from 'chai';
import { renderRows, resultText, type Row } from '../../../src/cli/commands/get';
import { countByGrade, graderImage, gradeLabel, gradeVerdict, gradeWhen } from '../../../src/sets/grade-text';
import { summarize } from '../../../src/sets/summary';
import type { NormalizedGrade, SetPolicy } from '../../../src/spec/types';
import { gradeHash } from '../../../src/spec/grade-hash';
import type { AttemptStatus, GradeRecord } from '../../../src/status/types';
import { spec, status } from '../../support/builders';

const G: NormalizedGrade = {
  image: null,
  command: ['sh', '-c', 'exit 0'],
  env: {},
  fixture: null,
  fixtureDigest: null,
  protect: [],
  deadlineSeconds: null,
  resources: { cpus: null, memoryBytes: null, pids: 512 },
  network: { mode: 'none' },
  when: 'always',
};

const grade = (over: Partial<GradeRecord> = {}): GradeRecord => ({
  k: 1,
  run: 1,
  gradeHash: gradeHash(G),
  state: 'graded',
  passed: true,
  resultsDir: '/r/a/run-1/grade-1/results',
  image: 'grader:1',
  createdAt: '2026-01-01T00:00:20.000Z',
  ...over,
});

const row = (name: string, st: AttemptStatus | null): Row => ({
  name,
  phase: st?.phase ?? 'Pending',
  outcome: { outcome: st?.phase === 'Succeeded' ? 'passed' : 'unfinished' },
  score: null,
  reason: st?.reason ?? '',
  exitCode: st?.exitCode ?? null,
  run: st?.run ?? 0,
  age: '1m',
  duration: '5s',
  labels: {},
  image: 'img:1',
  command: null,
  spec: null,
  results: st?.resultsDir ?? '',
  status: st,
});

const lines = (s: string) => s.trimEnd().split('\n');
const cols = (l: string | undefined) => (l ?? '').trim().split(/\s{2,}/);

describe('grade views', () => {
  it('a grade in words: the verdict (with its score), or why the grader could not give one; named by its k', () => {
    expect(gradeVerdict(grade())).to.equal('pass');
    expect(gradeVerdict(grade({ passed: false, score: 0.25 }))).to.equal('fail (score 0.25)');
    expect(gradeVerdict(grade({ state: 'grading', passed: undefined }))).to.equal('grading');
    expect(gradeVerdict(grade({ state: 'failed', passed: undefined, reason: 'GradeFailed' }))).to.equal('GradeFailed');
    expect(gradeVerdict(grade({ state: 'timedOut', passed: undefined }))).to.equal('GradeTimedOut');
    expect(gradeLabel(grade({ k: 2, passed: false }))).to.equal('grade-2: fail');
    expect(graderImage(grade({ imageId: `sha256:${'ab'.repeat(32)}` }))).to.equal(`grader:1 (${'ab'.repeat(6)})`);
    // the attempt's run's image, recorded by its id
    expect(graderImage(grade({ image: `sha256:${'cd'.repeat(32)}`, imageId: `sha256:${'cd'.repeat(32)}` }))).to.equal(`sha256:${'cd'.repeat(6)}`);
    expect(gradeWhen(grade())).to.equal('2026-01-01T00:00:20.000Z');
    expect(gradeWhen(grade({ startedAt: 'S', finishedAt: 'F' }))).to.equal('F');
    expect(countByGrade([null, { k: 1 }, { k: 2 }, { k: 2 }])).to.deep.equal({ 1: 1, 2: 2 });
    expect(countByGrade([null, null])).to.equal(null);
  });

  it("get: a GRADE column (the current run's latest grade) only when a row has one; -o wide adds the grader's image", () => {
    const plain = row('p', status('p', { phase: 'Succeeded', exitCode: 0 }));
    // an earlier run's grade is not the current run's
    const old = row('o', status('o', { phase: 'Succeeded', exitCode: 0, run: 2, grades: [grade()] }));
    const graded = row('g', status('g', { phase: 'Succeeded', exitCode: 0, grades: [grade(), grade({ k: 2, passed: false, image: 'grader:2' })] }));
    expect(cols(lines(renderRows([plain, old], false))[0])).to.deep.equal(['NAME', 'PHASE', 'REASON', 'EXIT', 'RUN', 'AGE', 'DURATION', 'RESULT']);
    const t = lines(renderRows([graded, old, plain], false));
    expect(cols(t[0])).to.deep.equal(['NAME', 'PHASE', 'REASON', 'EXIT', 'RUN', 'AGE', 'DURATION', 'RESULT', 'GRADE']);
    expect(cols(t[1])[7]).to.equal('passed');
    expect(cols(t[1]).at(-1)).to.equal('grade-2: fail');
    expect(cols(t[2]).at(-1)).to.equal('-');
    const w = lines(renderRows([graded, plain], true));
    expect(cols(w[0]).slice(-2)).to.deep.equal(['RESULTS', 'GRADER']);
    expect(cols(w[1]).at(-1)).to.equal('grader:2');
    expect(cols(w[2]).at(-1)).to.equal('-');
  });

  it('get: the RESULT column says how a run counts, with the score that decided it; a Succeeded run that scored 0 failed', () => {
    const r = (outcome: Row['outcome'], score: number | null, reason = '') => resultText({ outcome, score, reason });
    expect(r({ outcome: 'failed' }, 0)).to.equal('failed (score 0)');
    expect(r({ outcome: 'passed' }, 0.8)).to.equal('passed (score 0.8)');
    expect(r({ outcome: 'passed' }, null)).to.equal('passed');
    // the reason the REASON column does not say (a Succeeded run without a readable score)
    expect(r({ outcome: 'infra', reason: 'ScoreMissing' }, null)).to.equal('infra (ScoreMissing)');
    expect(r({ outcome: 'infra', reason: 'ImageMissing' }, null, 'ImageMissing')).to.equal('infra');
    expect(r({ outcome: 'skipped', reason: 'Deleted' }, null, 'Deleted')).to.equal('skipped');
    expect(r({ outcome: 'unfinished' }, null)).to.equal('-');
  });

  it("summary: each set's children counted by the grade (k) their outcome comes from", () => {
    const policy: SetPolicy = {
      name: 's',
      axes: ['seed'],
      maxParallel: null,
      failFast: false,
      maxFailed: null,
      infra: [],
      score: null,
      source: { file: 's.yaml', line: 1, col: 1 },
    };
    const child = (name: string, seed: string) => ({
      name,
      coords: { seed },
      loaded: { ...spec(name, { grade: G }), set: { set: policy, coords: { seed }, index: Number(seed) } },
    });
    const kids = [child('s-0', '0'), child('s-1', '1'), child('s-2', '2')];
    const ran = {
      phase: 'Succeeded' as const,
      reason: 'Completed',
      exitCode: 0,
      startedAt: '2026-01-01T00:00:01.000Z',
      finishedAt: '2026-01-01T00:00:05.000Z',
    };
    const recs = new Map([
      ['s-0', status('s-0', { ...ran, grades: [grade()] })],
      ['s-1', status('s-1', { ...ran, grades: [grade(), grade({ k: 2, passed: false })] })],
    ]);
    const [s] = summarize(new Map([['s', { policy, children: kids }]]), recs, 0).sets;
    expect(s?.grades).to.deep.equal({ 1: 1, 2: 1 });
    expect(s?.children.map((c) => [c.name, c.outcome, c.grade?.k ?? null])).to.deep.equal([
      ['s-0', 'passed', 1],
      ['s-1', 'failed', 2],
      ['s-2', 'unfinished', null],
    ]);
    const ungraded = summarize(
      new Map([
        ['s', { policy, children: [{ name: 'x', coords: { seed: '0' }, loaded: { ...spec('x'), set: { set: policy, coords: { seed: '0' }, index: 0 } } }] }],
      ]),
      new Map(),
      0,
    );
    expect(ungraded.sets[0]?.grades).to.equal(null);
  });
});
