/**
 * What an operation's outcome means (plan/follow-up.ts): pure, like the planner. The follow-up
 * operations rendered as a plan, golden.
 */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { desiredAttempt } from '../../../src/desired/attempt';
import { followUp, MAX_FOLLOW_UPS } from '../../../src/plan/follow-up';
import { renderPlan } from '../../../src/plan/render';
import { beginRunOp, sidecarOps } from '../../../src/plan/ops';
import type { AttemptAction, OpOutcome, Operation, SidecarOperation } from '../../../src/plan/types';
import { spec, status, T0 } from '../../support/builders';

const d = desiredAttempt(
  { instance: 'default', policy: {} },
  spec('a', { network: { mode: 'isolated', egress: [] }, sidecars: [{ name: 'db', image: 'img', command: null, env: {}, secretEnv: {}, secrets: [] }] }),
  1,
  '/r/a/run-1/out',
);
const withSecret = desiredAttempt(
  { instance: 'default', policy: {} },
  spec('a', {
    network: { mode: 'isolated', egress: [] },
    secrets: [{ name: 'tok', fromEnv: 'BERTH_X' }],
    sidecars: [{ name: 'db', image: 'img', command: null, env: {}, secretEnv: {}, secrets: ['tok'] }],
  }),
  1,
  '/r/a/run-1/out',
);
const create: Operation = { type: 'create-container', resource: `container:${d.container.name}`, desired: d, cause: 'not found' };
const start: Operation = { type: 'start', resource: `container:${d.container.name}`, desired: d, cause: 'created' };
const [sidecar, startSidecar, ready] = sidecarOps(d, 0, 'not found') as [SidecarOperation, SidecarOperation, SidecarOperation];
const restarted = sidecarOps(d, 0, 'db exited while the attempt runs', true);
const restartReady = restarted[restarted.length - 1] as SidecarOperation;
const action = (ops: Operation[]): AttemptAction => ({
  attempt: 'a',
  kind: 'provision',
  summary: 'test',
  ops,
  desired: d,
  status: status('a', { containerId: 'c-main' }),
});

function golden(
  a: AttemptAction,
  op: Operation,
  out: Exclude<OpOutcome, { type: 'done' }>,
  rest: Operation[] = [],
): { ok: boolean; error?: string; plan: string[] } {
  const f = followUp(a, op, out, rest, T0);
  const text = renderPlan({ at: T0, actions: [{ ...a, ops: f.ops }], unchanged: new Map() })
    .trimEnd()
    .split('\n');
  return { ok: f.ok, ...(f.error ? { error: f.error } : {}), plan: text.slice(1, -1) };
}

const theirs = { owned: false as const, why: 'it carries no berth labels' };

describe('follow-up: what an outcome means', function () {
  it('a name held by another: Blocked/NameConflict; the holder is never touched', function () {
    const f = followUp(
      action([create, start]),
      create,
      { type: 'conflict', kind: 'container', name: d.container.name, id: 'f00d00000000aa', owner: theirs },
      [start],
      T0,
    );
    expect(f.ok).to.equal(true);
    expect(f.ops).to.deep.equal([
      {
        type: 'record',
        resource: 'attempt:a',
        cause: 'name held',
        patch: {
          phase: 'Blocked',
          reason: REASONS.nameConflict,
          message: `container name ${d.container.name} is held by container f00d00000000 that berth did not create (it carries no berth labels); it is left alone`,
        },
      },
    ]);
  });

  it("the attempt's own container holds the name: the create goes on with it, then the rest", function () {
    const r = golden(
      action([create, start]),
      create,
      { type: 'conflict', kind: 'container', name: d.container.name, id: 'c-old', owner: { owned: true, attempt: 'a' } },
      [start],
    );
    expect(r).to.deep.equal({
      ok: true,
      plan: [
        "  + create  container:berth_default_a  (the attempt's own container from an earlier try holds the name)",
        '  > start   container:berth_default_a  (created)',
      ],
    });
    expect(
      followUp(action([create]), create, { type: 'conflict', kind: 'container', name: 'n', id: 'c-old', owner: { owned: true, attempt: 'a' } }, [], T0).ops[0],
    ).to.include({ use: 'c-old' });
  });

  it("the attempt's own container that does not attest: removed, Pending/CreateFailed (tried again later)", function () {
    const r = golden(
      action([create, start]),
      create,
      { type: 'conflict', kind: 'container', name: d.container.name, id: 'c-old', owner: { owned: true, attempt: 'a' }, unattested: 'image x' },
      [start],
    );
    expect(r.ok).to.equal(false);
    expect(r.plan).to.deep.equal([
      "  - remove        container:berth_default_a  (an earlier try's container did not attest: image x)",
      '  ~ mark Pending  attempt:a                  (create failed)',
    ]);
  });

  it('a sidecar that is not ready before the main container exists: the run ends SidecarFailed, nothing stopped', function () {
    const r = golden(
      action([sidecar, startSidecar, ready, create, start]),
      ready,
      { type: 'not-ready', index: 0, id: 'c-db', message: 'exited right after its start (exit code 2)' },
      [create, start],
    );
    expect(r).to.deep.equal({ ok: true, plan: ['  * finish Failed  attempt:a  (sidecar db exited right after its start (exit code 2))'] });
  });

  it('a sidecar that does not come back while the attempt runs: the main container is stopped first', function () {
    const f = followUp(
      action(restarted),
      restartReady,
      { type: 'not-ready', index: 0, id: 'c-db', message: 'exited right after its start (exit code 2)' },
      [],
      T0,
    );
    expect(f.ops.map((o) => [o.type, 'id' in o ? o.id : undefined])).to.deep.equal([
      ['stop', 'c-main'],
      ['finish', 'c-main'],
    ]);
    expect(f.ops[1]).to.deep.include({
      outcome: { phase: 'Failed', reason: REASONS.sidecarFailed, message: 'sidecar db exited right after its start (exit code 2)' },
    });
  });

  it('a failed provisioning step: Pending/CreateFailed; a refused start is recorded with its status and container', function () {
    const f = followUp(action([start]), start, { type: 'failed', message: 'OCI runtime create failed (HTTP 500)', status: 500, containerId: 'c-main' }, [], T0);
    expect(f).to.deep.include({ ok: false, error: 'start container:berth_default_a: OCI runtime create failed (HTTP 500)' });
    expect(f.ops[0]).to.deep.include({
      patch: {
        phase: 'Pending',
        reason: REASONS.createFailed,
        message: 'OCI runtime create failed (HTTP 500)',
        startFailure: { run: 1, containerId: 'c-main', at: new Date(T0).toISOString(), status: 500, message: 'OCI runtime create failed (HTTP 500)' },
      },
    });
    const gone = followUp(action([start]), start, { type: 'not-found', message: 'No such container (HTTP 404)' }, [], T0);
    expect((gone.ops[0] as { patch: { startFailure?: { status: number } } }).patch.startFailure?.status).to.equal(404);
  });

  it('a failure of a step that provisions nothing records nothing; the action failed', function () {
    const stop: Operation = { type: 'stop', resource: 'container:x', id: 'x', graceSeconds: 10, cause: 'test' };
    expect(followUp(action([stop]), stop, { type: 'failed', message: 'boom' }, [], T0)).to.deep.equal({ ok: false, error: 'stop container:x: boom', ops: [] });
  });

  it('a secret missing, a path with a link, a backend refusal: Blocked with their reasons', function () {
    const reasons = [
      followUp(action([create]), create, { type: 'secret-missing', message: 'secret s: gone' }, [], T0),
      followUp(action([create]), create, { type: 'unsafe-path', message: '/r is a symbolic link' }, [], T0),
      followUp(action([create]), create, { type: 'refused', reason: 'NoNodeEnforces', message: 'no node' }, [], T0),
    ].map((f) => [f.ok, (f.ops[0] as { patch: { phase: string; reason: string } }).patch.phase, (f.ops[0] as { patch: { reason: string } }).patch.reason]);
    expect(reasons).to.deep.equal([
      [true, 'Blocked', REASONS.secretMissing],
      [false, 'Blocked', REASONS.unsafePath],
      [true, 'Blocked', 'NoNodeEnforces'],
    ]);
  });

  it('a sidecar step that fails: Pending/CreateFailed while provisioning; while the attempt runs, the action failed and nothing is recorded', function () {
    for (const op of sidecarOps(d, 0, 'not found')) {
      const f = followUp(action([op]), op, { type: 'failed', message: 'boom (HTTP 500)', status: 500 }, [], T0);
      expect([op.type, f.ok, (f.ops[0] as { patch?: { reason: string } } | undefined)?.patch?.reason]).to.deep.equal([op.type, false, REASONS.createFailed]);
    }
    for (const op of restarted) {
      expect(followUp(action([op]), op, { type: 'failed', message: 'boom (HTTP 500)', status: 500 }, [], T0)).to.deep.equal({
        ok: false,
        error: `${op.type} ${op.resource}: boom (HTTP 500)`,
        ops: [],
      });
    }
  });

  it("a sidecar's secret gone at its copy: that sidecar removed, Blocked/SecretMissing", function () {
    const ops = sidecarOps(withSecret, 0, 'not found');
    const copy = ops.find((o) => o.type === 'copy-in-sidecar') as SidecarOperation;
    const r = golden(action(ops), copy, { type: 'secret-missing', message: 'secret tok: BERTH_X is not set', containerId: 'c-db' }, ops.slice(2));
    expect(r).to.deep.equal({
      ok: true,
      plan: [
        '  - remove        container:berth_default_a_sc_db  (secret missing: the run cannot be filled)',
        '  ~ mark Blocked  attempt:a                        (secret missing)',
      ],
    });
  });

  it("a sidecar's name held by its own earlier try: removed, made again, and the rest of its steps follow", function () {
    const ops = sidecarOps(d, 0, 'not found');
    const f = followUp(
      action([...ops, create]),
      sidecar,
      { type: 'conflict', kind: 'container', name: 'berth_default_a_sc_db', id: 'c-old', owner: { owned: true, attempt: 'a' } },
      [...ops.slice(1), create],
      T0,
    );
    expect(f.ok).to.equal(true);
    expect(f.ops.map((o) => o.type)).to.deep.equal(['remove-container', 'create-sidecar', 'start-sidecar', 'ready-sidecar', 'create-container']);
  });

  it('not-ready met by anything but the wait for a sidecar is a failure of that step', function () {
    const f = followUp(action([startSidecar]), startSidecar, { type: 'not-ready', index: 0, id: 'c-db', message: 'exited' }, [], T0);
    expect([f.ok, (f.ops[0] as { patch: { reason: string } }).patch.reason]).to.deep.equal([false, REASONS.createFailed]);
  });

  it('an outcome met again after MAX_FOLLOW_UPS follow-ups counts as a failure (a name fought over)', function () {
    const out = { type: 'conflict' as const, kind: 'container' as const, name: 'n', id: 'c-old', owner: { owned: true as const, attempt: 'a' } };
    expect(followUp(action([sidecar]), sidecar, out, [], T0, MAX_FOLLOW_UPS - 1).ok).to.equal(true);
    const f = followUp(action([sidecar]), sidecar, out, [], T0, MAX_FOLLOW_UPS);
    expect(f.ok).to.equal(false);
    expect((f.ops[0] as { patch: { reason: string } }).patch.reason).to.equal(REASONS.createFailed);
  });

  it('a failed attestation: the container and its sidecars stopped, the run ends AttestationFailed', function () {
    const att: Operation = { type: 'attest', resource: `container:${d.container.name}`, id: 'c-main', desired: d, cause: 'due' };
    const r = golden(action([att]), att, {
      type: 'attestation-failed',
      id: 'c-main',
      cause: 'attached to network bridge',
      sidecars: [{ alias: 'db', role: 'sidecar', id: 'c-db' }],
    });
    expect(r).to.deep.equal({
      ok: true,
      plan: [
        '  ! stop           container:berth_default_a        (attached to network bridge)',
        '  ! stop           container:berth_default_a_sc_db  (attached to network bridge)',
        '  * finish Failed  container:berth_default_a        (attached to network bridge)',
      ],
    });
  });

  describe('the steps of the main container, one engine call each', function () {
    const copy: Operation = { type: 'copy-in', resource: `container:${d.container.name}`, desired: d, archive: 'fixture', cause: 'the fixture' };
    const copied: Operation = { type: 'record-copied', resource: 'attempt:a', desired: d, cause: 'a start may follow from here on' };
    const begin = beginRunOp(d, { counters: { retriesUsed: 0 }, ownFolder: false });
    const attestStart: Operation = { type: 'attest-start', resource: `container:${d.container.name}`, desired: d, cause: 'started' };
    const rest = [copy, copied, start, attestStart];

    it("a 409 at the create with the attempt's own container that attests: it is used, and the copies, the record and the start follow", function () {
      const r = golden(
        action([begin, create, ...rest]),
        create,
        { type: 'conflict', kind: 'container', name: d.container.name, id: 'c-old', owner: { owned: true, attempt: 'a' } },
        rest,
      );
      expect(r).to.deep.equal({
        ok: true,
        plan: [
          "  + create        container:berth_default_a  (the attempt's own container from an earlier try holds the name)",
          '  + copy fixture  container:berth_default_a  (the fixture)',
          '  ~ mark copied   attempt:a                  (a start may follow from here on)',
          '  > start         container:berth_default_a  (created)',
          '  ? attest start  container:berth_default_a  (started)',
        ],
      });
    });

    it('a 404 at a copy: Pending/CreateFailed, the copy never recorded done and no start', function () {
      const f = followUp(action(rest), copy, { type: 'not-found', message: 'No such container (HTTP 404)', containerId: 'c-new' }, rest.slice(1), T0);
      expect(f).to.deep.include({ ok: false, error: 'copy-in container:berth_default_a: No such container (HTTP 404)' });
      expect(f.ops.map((o) => o.type)).to.deep.equal(['record']);
      // no start failure: the start was never asked for
      expect(f.ops[0]).to.deep.include({ patch: { phase: 'Pending', reason: REASONS.createFailed, message: 'No such container (HTTP 404)' } });
    });

    it('a link or a missing secret met at a copy: the container just made is removed, then Blocked', function () {
      const unsafe = golden(action(rest), copy, { type: 'unsafe-path', message: 'fixture /f is a symbolic link', containerId: 'c-new' }, rest.slice(1));
      expect(unsafe).to.deep.equal({
        ok: false,
        error: 'copy-in container:berth_default_a: fixture /f is a symbolic link',
        plan: [
          '  - remove        container:berth_default_a  (unsafe path: the run cannot be filled)',
          '  ~ mark Blocked  attempt:a                  (unsafe path)',
        ],
      });
      const secret = followUp(action(rest), copy, { type: 'secret-missing', message: 'secret s: gone', containerId: 'c-new' }, rest.slice(1), T0);
      expect(secret.ops.map((o) => [o.type, o.type === 'remove-container' ? o.id : (o as { patch?: { reason: string } }).patch?.reason])).to.deep.equal([
        ['remove-container', 'c-new'],
        ['record', REASONS.secretMissing],
      ]);
    });

    it('a link met making the run folder: Blocked/UnsafePath, nothing to remove', function () {
      const f = followUp(action([begin, create]), begin, { type: 'unsafe-path', message: '/r/a is a symbolic link' }, [create], T0);
      expect(f.ops.map((o) => o.type)).to.deep.equal(['record']);
      expect(f.ops[0]).to.deep.include({ patch: { phase: 'Blocked', reason: REASONS.unsafePath, message: '/r/a is a symbolic link' } });
    });

    it('a failed attestation right after the start: stopped with its sidecars, the run ends AttestationFailed', function () {
      const r = golden(action([attestStart]), attestStart, {
        type: 'attestation-failed',
        id: 'c-main',
        cause: 'attached to network bridge',
        sidecars: [{ alias: 'db', role: 'sidecar', id: 'c-db' }],
      });
      expect(r).to.deep.equal({
        ok: true,
        plan: [
          '  ! stop           container:berth_default_a        (attached to network bridge)',
          '  ! stop           container:berth_default_a_sc_db  (attached to network bridge)',
          '  * finish Failed  container:berth_default_a        (attached to network bridge)',
        ],
      });
    });

    it('a failure after the start is no create failure: the action failed, the next pass takes the container up as found', function () {
      expect(followUp(action([attestStart]), attestStart, { type: 'not-found', message: 'No such container (HTTP 404)' }, [], T0)).to.deep.equal({
        ok: false,
        error: 'attest-start container:berth_default_a: No such container (HTTP 404)',
        ops: [],
      });
    });
  });
});
