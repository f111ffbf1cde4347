/** Golden plans for AttemptSet children: order by set and coordinates, maxParallel, failFast, maxFailed, score. */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { plan } from '../../../src/plan/planner';
import { renderPlan } from '../../../src/plan/render';
import type { LoadedSpec, SetPolicy, SpecError } from '../../../src/spec/types';
import { container, input, snapshot, spec, status, statuses } from '../../support/builders';

const golden = (p: ReturnType<typeof plan>) => renderPlan(p).trimEnd().split('\n');

function policy(over: Partial<SetPolicy> = {}): SetPolicy {
  return {
    name: 'set',
    axes: ['x'],
    maxParallel: null,
    failFast: false,
    maxFailed: null,
    infra: [],
    score: null,
    source: { file: 'specs/set.yaml', line: 4, col: 9 },
    ...over,
  };
}

/** A child of `p` named `name`, at expansion position `index`. */
function child(p: SetPolicy, name: string, index: number, over: Partial<LoadedSpec['spec']> = {}): LoadedSpec {
  return { ...spec(name, over), set: { set: p, coords: { x: String(index) }, index } };
}

const done = (name: string, over: Parameters<typeof status>[1] = {}) =>
  status(name, { phase: 'Succeeded', reason: REASONS.completed, exitCode: 0, finishedAt: '2026-01-01T00:00:40.000Z', ...over });
const failed = (name: string, reason: string = REASONS.error, over: Parameters<typeof status>[1] = {}) =>
  status(name, { phase: reason === 'TimedOut' ? 'TimedOut' : 'Failed', reason, exitCode: 1, finishedAt: '2026-01-01T00:00:40.000Z', ...over });

const starts = (p: ReturnType<typeof plan>) => p.actions.filter((a) => a.ops.some((o) => o.type === 'start')).map((a) => a.attempt);

describe('planner: AttemptSet children', () => {
  it('admits in set order, then coordinates (not by child name), within --max-running', function () {
    const p = policy({ name: 'b-set' });
    const specs = [child(p, 'b-set-zz', 0), child(p, 'b-set-aa', 1), child(p, 'b-set-mm', 2), spec('a-solo'), spec('c-solo')];
    const out = plan(input({ specs, maxRunning: 3 }));
    expect(starts(out)).to.deep.equal(['a-solo', 'b-set-zz', 'b-set-aa']);
    expect(out.actions.map((a) => [a.attempt, a.kind, a.set ?? '-'])).to.deep.equal([
      ['a-solo', 'provision', '-'],
      ['b-set-zz', 'provision', 'b-set'],
      ['b-set-aa', 'provision', 'b-set'],
      ['b-set-mm', 'wait', 'b-set'],
      ['c-solo', 'wait', '-'],
    ]);
  });

  it("keeps a set's maxParallel within --max-running, counting its running children", function () {
    const p = policy({ maxParallel: 2 });
    const specs = [child(p, 'set-0', 0), child(p, 'set-1', 1), child(p, 'set-2', 2), child(p, 'set-3', 3), spec('z-solo')];
    const out = plan(
      input({
        specs,
        maxRunning: 10,
        snapshot: snapshot({ containers: [container('default', 'set-0', 'h-set-0')] }),
        statuses: statuses(status('set-0')),
      }),
    );
    expect(starts(out)).to.deep.equal(['set-1', 'z-solo']);
    expect(golden(out).filter((l) => l.startsWith('attempt set-2') || l.includes('mark Pending'))).to.deep.equal([
      'attempt set-2: wait (not found: run 1 waits: set set runs maxParallel 2)',
      '  ~ mark Pending  attempt:set-2  (set set runs maxParallel 2)',
      '  ~ mark Pending  attempt:set-3  (set set runs maxParallel 2)',
    ]);
    const rec = out.actions.find((a) => a.attempt === 'set-3')?.ops[0];
    expect(rec).to.deep.include({ type: 'record', patch: { phase: 'Pending', reason: REASONS.waitingForSet, run: 1, specHash: 'h-set-3' } });
  });

  it('failFast: after a task failure no child of the set starts; they end Failed with reason FailFast', function () {
    const p = policy({ failFast: true });
    const other = policy({ name: 'other', failFast: true });
    const specs = [child(p, 'set-0', 0), child(p, 'set-1', 1), child(p, 'set-2', 2), child(other, 'other-0', 0)];
    const out = plan(
      input({
        specs,
        statuses: statuses(
          failed('set-0'),
          status('set-2', { phase: 'Pending', reason: REASONS.waitingForSlot, startedAt: undefined, containerId: undefined }),
        ),
      }),
    );
    expect(starts(out)).to.deep.equal(['other-0']);
    expect(golden(out).filter((l) => l.includes('set-'))).to.deep.equal([
      'attempt set-1: skip (not started: set set has failFast and set-0 failed)',
      '  ~ mark Failed  attempt:set-1  (FailFast)',
      'attempt set-2: skip (not started: set set has failFast and set-0 failed)',
      '  ~ mark Failed  attempt:set-2  (FailFast)',
    ]);
    // Once recorded, nothing more to do; without failFast they would start (admission decides anew).
    const recorded = statuses(
      failed('set-0'),
      status('set-1', { phase: 'Failed', reason: REASONS.failFast, startedAt: undefined, containerId: undefined, run: 1 }),
      status('set-2', { phase: 'Failed', reason: REASONS.failFast, startedAt: undefined, containerId: undefined, run: 1 }),
    );
    const again = plan(input({ specs: specs.slice(0, 3), statuses: recorded }));
    expect(again.actions.filter((a) => a.ops.length)).to.deep.equal([]);
    expect(again.unchanged.get('set-1')).to.equal('Failed');
    const relaxed = policy({ failFast: false });
    const after = plan(input({ specs: [child(relaxed, 'set-0', 0), child(relaxed, 'set-1', 1), child(relaxed, 'set-2', 2)], statuses: recorded }));
    expect(starts(after)).to.deep.equal(['set-1', 'set-2']);
  });

  it('failFast waits for retries: a failure with retries left is not yet a task failure', function () {
    const p = policy({ failFast: true });
    const out = plan(input({ specs: [child(p, 'set-0', 0, { retries: 1 }), child(p, 'set-1', 1)], statuses: statuses(failed('set-0')) }));
    expect(out.actions.find((a) => a.attempt === 'set-1')?.kind).to.equal('provision');
  });

  it('maxFailed counts infrastructure outcomes only (not task failures: TimedOut and OOMKilled are the task’s), then stops admitting', function () {
    const p = policy({ maxFailed: 2 });
    const specs = [child(p, 'set-0', 0), child(p, 'set-1', 1), child(p, 'set-2', 2), child(p, 'set-3', 3), child(p, 'set-4', 4)];
    const tasks = statuses(failed('set-0', 'TimedOut'), failed('set-1', REASONS.oomKilled), failed('set-2', REASONS.error));
    expect(starts(plan(input({ specs, statuses: tasks })))).to.deep.equal(['set-3', 'set-4']);
    const reached = statuses(failed('set-0', REASONS.lost), failed('set-1', REASONS.attestationFailed), failed('set-2', REASONS.error));
    const out = plan(input({ specs, statuses: reached }));
    expect(starts(out)).to.deep.equal([]);
    const a = out.actions.find((x) => x.attempt === 'set-3');
    expect(a?.kind).to.equal('skip');
    expect(a?.summary).to.equal('not started: set set reached maxFailed 2 (infrastructure failures: set-0 (Lost), set-1 (AttestationFailed))');
    expect(a?.ops[0]).to.deep.include({ patch: { phase: 'Failed', reason: REASONS.maxFailedReached, message: a?.summary, run: 1, specHash: 'h-set-3' } });
  });

  it('a set that moves TimedOut to infrastructure (score.infra) counts it for maxFailed, not for failFast', function () {
    const p = policy({ maxFailed: 1, failFast: true, infra: ['TimedOut'] });
    const out = plan(input({ specs: [child(p, 'set-0', 0), child(p, 'set-1', 1)], statuses: statuses(failed('set-0', 'TimedOut')) }));
    expect(out.actions.find((a) => a.attempt === 'set-1')?.summary).to.equal(
      'not started: set set reached maxFailed 1 (infrastructure failures: set-0 (TimedOut))',
    );
    const fast = policy({ failFast: true });
    const timedOut = plan(input({ specs: [child(fast, 'set-0', 0), child(fast, 'set-1', 1)], statuses: statuses(failed('set-0', 'TimedOut')) }));
    expect(timedOut.actions.find((a) => a.attempt === 'set-1')?.summary).to.match(/failFast and set-0 failed/);
  });

  it('with a score, a missing score counts as an infrastructure failure and a low one as a task failure', function () {
    const score = { file: 'score.json', pass: 1 };
    const budget = policy({ maxFailed: 1, score });
    const missing = statuses(done('set-0', { scoreError: 'score.json: not found' }));
    expect(plan(input({ specs: [child(budget, 'set-0', 0), child(budget, 'set-1', 1)], statuses: missing })).actions[0]?.kind).to.equal('skip');
    const fast = policy({ failFast: true, score });
    const low = statuses(done('set-0', { score: 0.5 }));
    expect(plan(input({ specs: [child(fast, 'set-0', 0), child(fast, 'set-1', 1)], statuses: low })).actions[0]?.summary).to.match(/failFast and set-0 failed/);
    const high = statuses(done('set-0', { score: 1 }));
    expect(plan(input({ specs: [child(fast, 'set-0', 0), child(fast, 'set-1', 1)], statuses: high })).actions[0]?.kind).to.equal('provision');
  });

  it("asks the finish of a scored child's run to read its score file", function () {
    const p = policy({ score: { file: 'out/score.json', pass: 1 } });
    const out = plan(
      input({
        specs: [child(p, 'set-0', 0), child(policy({ name: 'plain' }), 'plain-0', 0)],
        snapshot: snapshot({
          containers: [container('default', 'set-0', 'h-set-0', { state: 'exited' }), container('default', 'plain-0', 'h-plain-0', { state: 'exited' })],
        }),
        statuses: statuses(status('set-0'), status('plain-0')),
      }),
    );
    const finish = (n: string) => out.actions.find((a) => a.attempt === n)?.ops.find((o) => o.type === 'finish');
    expect(finish('set-0')).to.deep.include({ score: 'out/score.json' });
    expect(finish('plain-0')).to.not.have.property('score');
  });

  it('plan says, per set, which children a template edit replaces and which cells are new', function () {
    const p = policy({ name: 'swe' });
    const specs = [child(p, 'swe-a', 0, {}), child(p, 'swe-b', 1), child(p, 'swe-c', 2), child(p, 'swe-d', 3)];
    const edited = specs.map((s, i) => (i < 2 ? { ...s, hash: `new-${s.spec.name}` } : s));
    const fin = (n: string) => done(n);
    const out = plan(
      input({
        specs: edited,
        snapshot: snapshot({ containers: ['swe-a', 'swe-b', 'swe-c'].map((n) => container('default', n, `h-${n}`, { state: 'exited' })) }),
        statuses: statuses(fin('swe-a'), fin('swe-b'), fin('swe-c')),
      }),
    );
    expect(golden(out).filter((l) => l.startsWith('AttemptSet'))).to.deep.equal([
      'AttemptSet swe: 2 children replaced (spec changed): swe-a, swe-b',
      'AttemptSet swe: 1 new child: swe-d',
    ]);
    expect(out.actions.filter((a) => a.kind === 'replace').map((a) => a.attempt)).to.deep.equal(['swe-a', 'swe-b']);
  });

  it('a child whose container ended holds its maxParallel place until its finish is recorded (failFast must see the outcome first)', function () {
    const p = policy({ maxParallel: 1, failFast: true });
    const out = plan(
      input({
        specs: [child(p, 'set-0', 0), child(p, 'set-1', 1)],
        snapshot: snapshot({ containers: [container('default', 'set-0', 'h-set-0', { state: 'exited' })] }),
        statuses: statuses(status('set-0')),
      }),
    );
    expect(out.actions.map((a) => [a.attempt, a.kind])).to.deep.equal([
      ['set-0', 'finish'],
      ['set-1', 'wait'],
    ]);
  });

  it("counts a controller's admissions still in flight against the set's maxParallel", function () {
    const p = policy({ maxParallel: 2 });
    const specs = [child(p, 'set-0', 0), child(p, 'set-1', 1), child(p, 'set-2', 2)];
    expect(starts(plan(input({ specs, reservedSlots: 1, reservedBySet: new Map([['set', 1]]) })))).to.deep.equal(['set-0']);
    expect(starts(plan(input({ specs, reservedSlots: 1, reservedBySet: new Map([['other', 1]]) })))).to.deep.equal(['set-0', 'set-1']);
  });
});

describe('planner: a child held at its last good spec (its set file broken)', () => {
  const heldErr: SpecError[] = [{ file: 'specs/set.yaml', line: 7, col: 1, path: '', code: 'yaml-syntax', message: 'Tabs are not allowed as indentation' }];
  const held = (name: string, index: number) => ({ ...child(policy(), name, index), held: heldErr });

  it('a run under way ends and is harvested under that spec; no new run starts; one that never ran is Invalid with the errors', function () {
    const p = plan(
      input({
        specs: [held('set-0', 0), held('set-1', 1), held('set-2', 2), held('set-3', 3)],
        snapshot: snapshot({ containers: [container('default', 'set-0', 'h-set-0', { state: 'exited' })] }),
        statuses: statuses(
          status('set-0'),
          done('set-1', { rerunRequested: { at: '2026-01-01T00:01:00.000Z', run: 1 } }),
          failed('set-2', REASONS.error, { retriesUsed: 0 }),
        ),
      }),
    );
    const byName = new Map(p.actions.map((a) => [a.attempt, a]));
    expect(byName.get('set-0')?.kind).to.equal('finish');
    expect(byName.get('set-0')?.ops.some((o) => o.type === 'finish')).to.equal(true);
    // a rerun asked for waits for the file to be fixed
    expect(byName.get('set-1')?.ops ?? []).to.deep.equal([]);
    expect(starts(p)).to.deep.equal([]);
    expect(p.actions.some((a) => a.ops.some((o) => o.type === 'begin-run'))).to.equal(false);
    const invalid = byName.get('set-3');
    expect(invalid?.kind).to.equal('invalid');
    const rec = invalid?.ops[0];
    expect(rec?.type === 'record' && rec.patch.phase).to.equal('Invalid');
    expect(rec?.type === 'record' && rec.patch.specErrors?.[0]?.message).to.equal('Tabs are not allowed as indentation');
  });
});
