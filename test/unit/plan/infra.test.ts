/**
 * Infrastructure deaths: the rule that tells an engine restart's stop from the task's own end
 * (plan/exit-outcome.ts), and what the planner does after one or after a refused start. No engine.
 */
import { expect } from 'chai';
import type { ContainerState } from '../../../src/engine/types';
import { diedInEngineRestart, exitOutcome } from '../../../src/plan/exit-outcome';
import { plan } from '../../../src/plan/planner';
import { changeCount, renderPlan } from '../../../src/plan/render';
import { container, input, snapshot, spec, status, statuses, T0 } from '../../support/builders';

const B1 = { id: 'bridge-1', at: '2026-01-01T00:00:00.000000000Z' };
const B2 = { id: 'bridge-2', at: '2026-01-01T00:10:00.000000000Z' };

function exited(exitCode: number, finishedAt = '2026-01-01T00:05:00.123456789Z', over: Partial<ContainerState> = {}): ContainerState {
  return { status: 'exited', running: false, oomKilled: false, exitCode, error: '', startedAt: '2026-01-01T00:01:00Z', finishedAt, pid: 0, ...over };
}

describe('exit outcome: engine restart or the task itself', function () {
  it('reads TERM, KILL and a lost task under an earlier boot, ended before the current boot, as EngineRestarted', function () {
    for (const code of [143, 137, 255]) {
      expect(exitOutcome(exited(code), { ranUnder: B1, current: B2 }).reason, `exit ${code}`).to.equal('EngineRestarted');
    }
  });

  it('never without an engine restart: the same boot, or no boot known, is the task failing', function () {
    for (const boots of [{ ranUnder: B1, current: B1 }, { current: B2 }, { ranUnder: B1 }, {}]) {
      const o = exitOutcome(exited(143), boots);
      expect(o).to.deep.equal({ phase: 'Failed', reason: 'Error', message: 'exited with code 143' });
    }
  });

  it('not an end under the current boot (a container that outlived the restart and died later)', function () {
    expect(diedInEngineRestart(exited(143, '2026-01-01T00:10:00.500Z'), B1, B2)).to.equal(false);
    expect(diedInEngineRestart(exited(143, '2026-01-01T00:09:59.999Z'), B1, B2)).to.equal(true);
  });

  it('not any other exit code, nor an OOM kill, nor a zero finish time', function () {
    expect(exitOutcome(exited(1), { ranUnder: B1, current: B2 }).reason).to.equal('Error');
    expect(exitOutcome(exited(0), { ranUnder: B1, current: B2 }).reason).to.equal('Completed');
    expect(exitOutcome(exited(137, undefined, { oomKilled: true }), { ranUnder: B1, current: B2 }).reason).to.equal('OOMKilled');
    expect(diedInEngineRestart(exited(143, '0001-01-01T00:00:00Z'), B1, B2)).to.equal(false);
  });

  it('a non-zero exit with its engine-capped writable layer full is DiskLimitExceeded; a zero exit, a layer with room, an OOM kill or a deadline keep their own', function () {
    const cap = 64 * 1024 * 1024;
    const full = { usedBytes: 62 * 1024 * 1024, limitBytes: cap };
    const o = exitOutcome(exited(1), {}, undefined, full);
    expect([o.phase, o.reason]).to.deep.equal(['Failed', 'DiskLimitExceeded']);
    expect(o.message).to.equal('exited with code 1 with its writable layer full: 62 MiB of the 64 MiB the engine caps it at (resources.disk)');
    expect(exitOutcome(exited(0), {}, undefined, full).reason).to.equal('Completed');
    expect(exitOutcome(exited(1), {}, undefined, { usedBytes: 40 * 1024 * 1024, limitBytes: cap }).reason).to.equal('Error');
    expect(exitOutcome(exited(137, undefined, { oomKilled: true }), {}, undefined, full).reason).to.equal('OOMKilled');
    expect(exitOutcome(exited(1), {}, '2026-01-01T00:04:00Z', full).reason).to.equal('DeadlineExceeded');
    expect(exitOutcome(exited(1), {}, undefined, { usedBytes: 0, limitBytes: 0 }).reason).to.equal('Error');
  });

  it('a vanished container is Lost', function () {
    expect(exitOutcome(undefined).reason).to.equal('Lost');
  });

  it('a run found finished after its deadline is TimedOut whatever its exit code; one that ended before it keeps its own outcome', function () {
    // finished 00:05:00.12; deadlines just before and just after
    for (const code of [0, 1, 137]) {
      const o = exitOutcome(exited(code), {}, '2026-01-01T00:05:00.000Z');
      expect([o.phase, o.reason], `exit ${code}`).to.deep.equal(['TimedOut', 'DeadlineExceeded']);
      expect(o.message).to.include('nothing watching');
    }
    expect(exitOutcome(exited(137, undefined, { oomKilled: true }), {}, '2026-01-01T00:04:00Z').reason).to.equal('DeadlineExceeded');
    expect(exitOutcome(exited(0), {}, '2026-01-01T00:05:01Z').reason).to.equal('Completed');
    expect(exitOutcome(exited(1), {}, '2026-01-01T00:05:01Z').reason).to.equal('Error');
    expect(exitOutcome(exited(0), {}, undefined).reason).to.equal('Completed');
  });
});

describe('planner (infrastructure deaths)', function () {
  const copied = { action: 'provision' as const, run: 1, specHash: 'h-a', at: '2026-01-01T00:00:00.000Z', copied: true };
  const refused = { run: 1, containerId: 'id-a', at: '2026-01-01T00:00:50.000Z', status: 500, message: 'task 1234: already exists (HTTP 500)' };

  it('ends a run whose start the engine refused StartFailed, instead of starting that container again', function () {
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'created' })] }),
        statuses: statuses(status('a', { phase: 'Pending', reason: 'CreateFailed', startedAt: undefined, intent: copied, startFailure: refused })),
      }),
    );
    expect(renderPlan(p).split('\n').slice(0, 2)).to.deep.equal([
      'attempt a: finish (start refused by the engine)',
      '  * finish Failed  attempt:a  (start refused by the engine)',
    ]);
    const op = p.actions[0]?.ops[0];
    expect(op?.type === 'finish' && op.outcome).to.deep.equal({
      phase: 'Failed',
      reason: 'StartFailed',
      message: 'the engine refused to start the container: task 1234: already exists (HTTP 500)',
    });
  });

  it('starts the container again when the refusal was for another container or run (only start)', function () {
    for (const startFailure of [
      { ...refused, containerId: 'id-other' },
      { ...refused, run: 0 },
    ]) {
      const p = plan(
        input({
          specs: [spec('a')],
          snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'created' })] }),
          statuses: statuses(status('a', { phase: 'Pending', startedAt: undefined, intent: copied, startFailure })),
        }),
      );
      expect(p.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['start', 'attest-start']);
    }
  });

  it('never starts again a container whose start may have reached an engine that restarted since; the same boot, or none known: start', function () {
    const rec = status('a', { phase: 'Pending', reason: 'CreateFailed', startedAt: undefined, intent: copied, engineBoot: B1 });
    const obs = snapshot({ containers: [container('default', 'a', 'h-a', { state: 'created' })] });
    const p = plan(input({ specs: [spec('a')], snapshot: { ...obs, boot: B2 }, statuses: statuses(rec) }));
    expect(p.actions[0]?.summary).to.equal('the engine restarted during the start');
    const op = p.actions[0]?.ops[0];
    expect(op?.type === 'finish' && op.outcome?.reason).to.equal('EngineRestarted');
    for (const snap of [{ ...obs, boot: B1 }, obs]) {
      expect(plan(input({ specs: [spec('a')], snapshot: snap, statuses: statuses(rec) })).actions[0]?.ops.map((o) => o.type)).to.deep.equal([
        'start',
        'attest-start',
      ]);
    }
  });

  it('a container the engine shows running after it restarted during the start is stopped and the run ends EngineRestarted, never adopted', function () {
    const rec = status('a', { phase: 'Pending', reason: 'Provisioning', startedAt: undefined, intent: copied, engineBoot: B1 });
    const obs = snapshot({ containers: [container('default', 'a', 'h-a', { state: 'running' })] });
    const p = plan(input({ specs: [spec('a')], snapshot: { ...obs, boot: B2 }, statuses: statuses(rec) }));
    expect(p.actions[0]?.summary).to.equal('the engine restarted during the start');
    expect(p.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['stop', 'finish']);
    const op = p.actions[0]?.ops[1];
    expect(op?.type === 'finish' && op.outcome?.reason).to.equal('EngineRestarted');
    expect(p.actions[0]?.requeueAfterMs).to.equal(0);
    // the same boot, or none known: a start that went through before berth could record it: adopted
    for (const snap of [{ ...obs, boot: B1 }, obs]) {
      expect(plan(input({ specs: [spec('a')], snapshot: snap, statuses: statuses(rec) })).actions[0]?.kind).to.equal('adopt');
    }
  });

  it('re-runs an infrastructure death under --infra-retries, whatever the spec retries, with back-off', function () {
    for (const reason of ['EngineRestarted', 'StartFailed']) {
      const rec = status('a', { phase: 'Failed', reason, exitCode: 143, finishedAt: '2026-01-01T00:00:55.000Z' });
      const obs = snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] });
      const wait = plan(input({ specs: [spec('a', { retries: 0 })], snapshot: obs, statuses: statuses(rec) }));
      expect(wait.actions[0]?.kind).to.equal('wait');
      expect(wait.actions[0]?.summary).to.equal('infra retry 1/2 after back-off');
      expect(wait.actions[0]?.requeueAfterMs).to.equal(5_000);
      const go = plan(input({ now: T0 + 5_000, specs: [spec('a', { retries: 0 })], snapshot: obs, statuses: statuses(rec) }));
      expect(renderPlan(go).split('\n').slice(0, 2)).to.deep.equal([
        `attempt a: retry (run 1 ${reason}; infra retry 1/2: run 2)`,
        '  - remove        container:berth_default_a  (infra retry 1/2)',
      ]);
    }
  });

  it('stops at the infra budget, and never spends the spec retries on it', function () {
    const spent = status('a', { phase: 'Failed', reason: 'EngineRestarted', infraRetriesUsed: 2, finishedAt: '2026-01-01T00:00:00.000Z' });
    expect(changeCount(plan(input({ specs: [spec('a', { retries: 3 })], statuses: statuses(spent) })))).to.equal(0);
    const none = status('a', { phase: 'Failed', reason: 'StartFailed', finishedAt: '2026-01-01T00:00:00.000Z' });
    expect(changeCount(plan(input({ policy: { infraRetries: 0 }, specs: [spec('a', { retries: 3 })], statuses: statuses(none) })))).to.equal(0);
    const more = plan(input({ policy: { infraRetries: 3 }, specs: [spec('a')], statuses: statuses(spent) }));
    expect(more.actions[0]?.kind).to.equal('retry');
  });

  it('an Error run still counts against the spec retries, not the infra budget', function () {
    const rec = status('a', { phase: 'Failed', reason: 'Error', exitCode: 143, retriesUsed: 0, infraRetriesUsed: 2, finishedAt: '2026-01-01T00:00:00.000Z' });
    expect(changeCount(plan(input({ specs: [spec('a', { retries: 0 })], statuses: statuses(rec) })))).to.equal(0);
    expect(plan(input({ specs: [spec('a', { retries: 1 })], statuses: statuses(rec) })).actions[0]?.summary).to.equal('run 1 Error; retry 1/1: run 2');
  });
});
