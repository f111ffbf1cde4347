/**
 * Queue waits count from when the current run became eligible (`eligibleAt`, set when a run
 * begins), not from when the attempt first appeared: after an edit or a rerun, the new run's wait.
 * Old records without it fall back to the later of their creation and the previous run's end.
 */
import { expect } from 'chai';
import { beginRun } from '../../../src/execute/status-record';
import { buildReport } from '../../../src/report/model';
import { eligibleSince, summarizeSet } from '../../../src/sets/summary';
import type { DesiredAttempt } from '../../../src/desired/types';
import type { LoadedSpec, SetPolicy } from '../../../src/spec/types';
import { recordProblem } from '../../../src/status/validate';
import { spec, status } from '../../support/builders';

const POLICY: SetPolicy = {
  name: 'swe',
  axes: [],
  maxParallel: null,
  failFast: false,
  maxFailed: null,
  infra: [],
  score: null,
  source: { file: 's.yaml', line: 4, col: 9 },
};
const at = (s: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + s * 1000).toISOString();

describe('queue waits from the moment the current run became eligible', () => {
  it('beginRun records when the new run became eligible; a record that holds the run keeps it', () => {
    const old = status('a', { phase: 'Succeeded', createdAt: at(0), startedAt: at(1), finishedAt: at(6), specHash: 'h1' });
    const d = { hash: 'h2', run: 2, loaded: { relFile: 'a.yaml' } } as unknown as DesiredAttempt;
    const begun = beginRun(old, d, { retriesUsed: 0 } as never, at(400));
    expect(begun.eligibleAt).to.equal(at(400));
    expect(begun.createdAt).to.equal(at(0));
    expect(beginRun(begun, d, { retriesUsed: 0 } as never, at(500)).eligibleAt).to.equal(at(400));
    expect(recordProblem(begun, 'a', 'default')).to.equal(undefined);
    expect(recordProblem({ ...begun, eligibleAt: 'soon' }, 'a', 'default')).to.match(/eligibleAt/);
  });

  it('eligibleSince: eligibleAt; without it the later of creation and the previous run’s end', () => {
    const rerun = status('a', {
      createdAt: at(0),
      eligibleAt: at(452),
      startedAt: at(455),
      history: [{ run: 1, specHash: 'h1', phase: 'Succeeded', finishedAt: at(6) }],
    });
    expect(eligibleSince(rerun)).to.equal(Date.parse(at(452)));
    const { eligibleAt: _e, ...old } = rerun;
    expect(eligibleSince(old)).to.equal(Date.parse(at(6)));
    expect(eligibleSince({ ...old, history: [] })).to.equal(Date.parse(at(0)));
    expect(Number.isNaN(eligibleSince(undefined))).to.equal(true);
  });

  it('summary and the report: an edited child rerun 6 s long waits 3 s, not the 7 minutes since it first appeared', () => {
    const policy: SetPolicy = { ...POLICY, axes: ['task'] };
    const kids: LoadedSpec[] = ['t1', 't2'].map((t, i) => ({ ...spec(`swe-${t}`), set: { set: policy, coords: { task: t }, index: i } }));
    const recs = new Map(
      kids.map((k) => [
        k.spec.name,
        status(k.spec.name, {
          specHash: k.hash,
          phase: 'Succeeded',
          run: 2,
          exitCode: 0,
          createdAt: at(0),
          eligibleAt: at(452),
          provisionedAt: at(454),
          startedAt: at(455),
          finishedAt: at(461),
          history: [{ run: 1, specHash: 'old', phase: 'Succeeded', startedAt: at(1), finishedAt: at(7) }],
        }),
      ]),
    );
    const s = summarizeSet(
      policy,
      kids.map((k) => ({ name: k.spec.name, coords: k.set?.coords ?? {}, loaded: k })),
      recs,
    );
    expect(s.queueMs).to.deep.equal({ p50: 3000, p95: 3000 });
    const report = buildReport({
      sets: [s],
      childLabels: new Map(),
      plain: [],
      statuses: recs,
      now: Date.parse(at(500)),
      instance: 'default',
      maxRunning: null,
      resultsRoot: '/r',
      linkBase: null,
      mode: 'file',
    });
    expect(report.attempts.map((a) => a.queuedAt)).to.deep.equal([Date.parse(at(452)), Date.parse(at(452))]);
    // The same records without eligibleAt (written before berth kept it): from the previous run's end.
    const old = new Map([...recs].map(([n, r]) => [n, { ...r, eligibleAt: undefined }]));
    expect(
      summarizeSet(
        policy,
        kids.map((k) => ({ name: k.spec.name, coords: k.set?.coords ?? {}, loaded: k })),
        old,
      ).queueMs,
    ).to.deep.equal({ p50: 448_000, p95: 448_000 });
  });
});
