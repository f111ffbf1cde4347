/**
 * How a new run begins is the planner's to say (planner.ts `runCounters`, `ownsFolder`): the
 * retry counters it starts with and whether its results folder is already its own ride on the
 * operations that begin it; the executor only writes them. No engine.
 */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { plan } from '../../../src/plan/planner';
import type { AttemptAction, Operation, RunStart } from '../../../src/plan/types';
import type { AttemptStatus } from '../../../src/status/types';
import { input, spec, status, statuses } from '../../support/builders';

const ended = { finishedAt: '2026-01-01T00:00:00.000Z', containerId: undefined };

function only(rec: AttemptStatus, over: Parameters<typeof input>[0] = {}, retries = 3): AttemptAction {
  const p = plan(input({ specs: [spec('a', { retries })], statuses: statuses(rec), ...over }));
  expect(p.actions, JSON.stringify(p.actions.map((a) => a.summary))).to.have.length(1);
  return p.actions[0] as AttemptAction;
}

/** What the begin-run operation of the action carries. */
function start(a: AttemptAction): RunStart & { run: number } {
  const op = a.ops.find((o): o is Extract<Operation, { type: 'begin-run' }> => o.type === 'begin-run');
  expect(op, `${a.kind}: ${a.summary}`).to.not.equal(undefined);
  return { counters: op?.counters as RunStart['counters'], ownFolder: op?.ownFolder as boolean, run: op?.desired.run as number };
}

describe('planner: how a new run begins (retry counters, its folder)', function () {
  it('a failed run re-run counts a retry', function () {
    const a = only(status('a', { phase: 'Failed', reason: REASONS.error, exitCode: 1, retriesUsed: 1, ...ended }));
    expect(a.kind).to.equal('retry');
    expect(start(a)).to.deep.equal({ counters: { retriesUsed: 2 }, ownFolder: false, run: 2 });
  });

  it('an infrastructure death counts an infra retry, not a retry', function () {
    const a = only(status('a', { phase: 'Failed', reason: REASONS.engineRestarted, retriesUsed: 1, infraRetriesUsed: 0, ...ended }));
    expect(start(a)).to.deep.equal({ counters: { retriesUsed: 1, infraRetriesUsed: 1 }, ownFolder: false, run: 2 });
    // and an Error after infra retries keeps the infra count as it is
    const b = only(status('a', { phase: 'Failed', reason: REASONS.error, exitCode: 1, retriesUsed: 0, infraRetriesUsed: 2, ...ended }));
    expect(start(b).counters).to.deep.equal({ retriesUsed: 1, infraRetriesUsed: 2 });
  });

  it('berth rerun starts the counters afresh', function () {
    const a = only(
      status('a', {
        phase: 'Failed',
        reason: REASONS.engineRestarted,
        retriesUsed: 2,
        infraRetriesUsed: 1,
        rerunRequested: { at: '2026-01-01T00:00:50.000Z', run: 1 },
        ...ended,
      }),
    );
    expect(a.summary).to.contain('rerun requested');
    expect(start(a)).to.deep.equal({ counters: { retriesUsed: 0 }, ownFolder: false, run: 2 });
  });

  it('a new spec hash starts the counters afresh', function () {
    const a = only(status('a', { phase: 'Failed', reason: REASONS.error, exitCode: 1, specHash: 'h-old', retriesUsed: 2, infraRetriesUsed: 1, ...ended }));
    expect(a.kind).to.equal('replace');
    expect(start(a)).to.deep.equal({ counters: { retriesUsed: 0 }, ownFolder: false, run: 2 });
  });

  it('a run the record already holds (an interrupted provisioning) keeps its counters, and its folder is its own', function () {
    const rec = status('a', {
      phase: 'Pending',
      reason: REASONS.createFailed,
      retriesUsed: 1,
      infraRetriesUsed: 1,
      run: 2,
      resultsDir: '/r/a/run-2/results',
      intent: { action: 'provision', run: 2, specHash: 'h-a', at: '2026-01-01T00:00:00.000Z' },
      startedAt: undefined,
      containerId: undefined,
    });
    const a = only(rec);
    expect(start(a)).to.deep.equal({ counters: { retriesUsed: 1, infraRetriesUsed: 1 }, ownFolder: true, run: 2 });
    // another results folder for it (another --results-root) is not its own
    expect(start(only(rec, { resultsRoot: '/elsewhere' })).ownFolder).to.equal(false);
  });

  it('a retry that waits for a slot records the counters the run begins with', function () {
    const busy = status('b');
    const p = plan(
      input({
        maxRunning: 0,
        specs: [spec('a', { retries: 3 })],
        statuses: statuses(status('a', { phase: 'Failed', reason: REASONS.oomKilled, retriesUsed: 1, ...ended }), busy),
      }),
    );
    const rec = p.actions.find((a) => a.attempt === 'a')?.ops.find((o) => o.type === 'record');
    expect(rec).to.deep.include({ patch: { phase: 'Pending', reason: REASONS.waitingForSlot, run: 2, specHash: 'h-a' }, counters: { retriesUsed: 2 } });
  });
});
