/** Golden plans: literal specs, observed state and status records in; the rendered plan out. No engine. */
import { expect } from 'chai';
import { plan } from '../../../src/plan/planner';
import { renderPlan, changeCount } from '../../../src/plan/render';
import { container, input, network, snapshot, spec, status, statuses, T0, volume } from '../../support/builders';

const golden = (p: ReturnType<typeof plan>) => renderPlan(p).trimEnd().split('\n');

describe('planner (golden plans)', function () {
  it('creates everything from nothing, volumes and network before the container', function () {
    const p = plan(
      input({
        specs: [
          spec('b-iso', { network: { mode: 'isolated', egress: [] }, volumes: [{ name: 'cache', mountPath: '/cache', readOnly: false }] }),
          spec('a-hello'),
        ],
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt a-hello: provision (not found: run 1)',
      '  + create  container:berth-default-a-hello  (not found)',
      '  > start   container:berth-default-a-hello  (created)',
      'attempt b-iso: provision (not found: run 1)',
      '  + create  volume:berth-default-b-iso-cache  (not found)',
      '  + create  network:berth-default-b-iso       (not found)',
      '  + create  container:berth-default-b-iso     (not found)',
      '  > start   container:berth-default-b-iso     (created)',
      'Plan: 2 attempts to change (6 operations), 0 unchanged.',
    ]);
  });

  it('is a no-op for a running attempt that attests from the list', function () {
    const p = plan(input({ specs: [spec('a')], snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }), statuses: statuses(status('a')) }));
    expect(changeCount(p)).to.equal(0);
    expect(golden(p)).to.deep.equal(['No changes: 1 attempt as specified.']);
  });

  it('is a no-op for a finished attempt, whatever its container state', function () {
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }),
        statuses: statuses(status('a', { phase: 'Succeeded', finishedAt: '2026-01-01T00:00:40.000Z', exitCode: 0 })),
      }),
    );
    expect(changeCount(p)).to.equal(0);
  });

  it('replaces an attempt whose spec hash changed: old resources out, new run in', function () {
    const p = plan(
      input({
        specs: [spec('a', {}, 'h-new')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }),
        statuses: statuses(status('a', { phase: 'Succeeded', finishedAt: '2026-01-01T00:00:40.000Z' })),
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt a: replace (spec hash changed: run 2)',
      '  - remove  container:berth-default-a  (spec hash changed)',
      '  + create  container:berth-default-a  (not found)',
      '  > start   container:berth-default-a  (created)',
      'Plan: 1 attempt to change (3 operations), 0 unchanged.',
    ]);
    const d = p.actions[0]?.desired;
    expect(d?.run).to.equal(2);
    expect(d?.resultsDir).to.equal('/r/a/run-2/results');
  });

  it('stops and finishes a running spec-changed attempt before replacing it', function () {
    const p = plan(input({ specs: [spec('a', {}, 'h-new')], snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }), statuses: statuses(status('a')) }));
    expect(golden(p).slice(0, 4)).to.deep.equal([
      'attempt a: replace (spec hash changed: run 2)',
      '  ! stop           container:berth-default-a  (spec hash changed)',
      '  * finish Failed  attempt:a                  (spec hash changed)',
      '  - remove         container:berth-default-a  (spec hash changed)',
    ]);
  });

  it('collects an attempt with no spec: containers, then networks, then volumes', function () {
    const p = plan(
      input({
        snapshot: snapshot({
          containers: [container('default', 'gone', 'h-gone', { state: 'exited' })],
          networks: [network('default', 'gone', 'h-gone')],
          volumes: [volume('default', 'gone', 'cache', 'h-gone')],
        }),
        statuses: statuses(status('gone', { phase: 'Succeeded', finishedAt: '2026-01-01T00:00:40.000Z' })),
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt gone: collect (no spec)',
      '  - remove  container:berth-default-gone     (no spec)',
      '  - remove  network:berth-default-gone       (no spec)',
      '  - remove  volume:berth-default-gone-cache  (no spec)',
      '  - forget  attempt:gone                     (no spec)',
      'Plan: 1 attempt to change (4 operations), 0 unchanged.',
    ]);
  });

  it('leaves alone what runs under an invalid or duplicated spec', function () {
    const p = plan(
      input({
        protectedNames: new Set(['a']),
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }),
        statuses: statuses(status('a')),
      }),
    );
    expect(changeCount(p)).to.equal(0);
    expect(p.unchanged.get('a')).to.equal('Running');
  });

  it('leaves alone what a spec file that cannot be read declared', function () {
    const p = plan(input({ unreadableFiles: new Set(['a.yaml']), snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }) }));
    expect(changeCount(p)).to.equal(0);
  });

  it('marks a never-run invalid spec Invalid', function () {
    const p = plan(input({ protectedNames: new Set(['bad']), invalid: new Map([['bad', 'specs/bad.yaml:3:9: unknown field']]) }));
    expect(golden(p)).to.deep.equal([
      'attempt bad: invalid (specs/bad.yaml:3:9: unknown field)',
      '  ~ mark Invalid  attempt:bad  (spec invalid)',
      'Plan: 1 attempt to change (1 operations), 0 unchanged.',
    ]);
  });

  it('stops a running attempt attached to a network by hand: attestation failed', function () {
    const p = plan(
      input({ specs: [spec('a')], snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { networks: ['bridge', 'none'] })] }), statuses: statuses(status('a')) }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt a: stop (attestation failed: attached to network bridge; spec allows none)',
      '  ! stop           container:berth-default-a  (attestation failed: attached to network bridge; spec allows none)',
      '  * finish Failed  container:berth-default-a  (attestation failed: attached to network bridge; spec allows none)',
      'Plan: 1 attempt to change (2 operations), 0 unchanged.',
    ]);
  });

  it('stops an attempt past its deadline: TimedOut', function () {
    const p = plan(
      input({
        specs: [spec('a', { deadlineSeconds: 30 })],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }),
        statuses: statuses(status('a', { deadlineAt: '2026-01-01T00:00:30.000Z' })),
      }),
    );
    expect(golden(p).slice(1, 3)).to.deep.equal([
      '  ! stop             container:berth-default-a  (deadlineSeconds 30 exceeded)',
      '  * finish TimedOut  container:berth-default-a  (deadlineSeconds 30 exceeded)',
    ]);
  });

  it('requeues a running attempt at its deadline', function () {
    const p = plan(
      input({ specs: [spec('a', { deadlineSeconds: 90 })], snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }), statuses: statuses(status('a', { deadlineAt: '2026-01-01T00:01:30.000Z' })) }),
    );
    expect(changeCount(p)).to.equal(0);
    expect(p.actions[0]?.requeueAfterMs).to.equal(30_000);
  });

  it('finishes an exited container', function () {
    const p = plan(input({ specs: [spec('a')], snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }), statuses: statuses(status('a')) }));
    expect(golden(p)).to.deep.equal([
      'attempt a: finish (container exited)',
      '  * finish  container:berth-default-a  (container exited)',
      'Plan: 1 attempt to change (1 operations), 0 unchanged.',
    ]);
  });

  it('marks a run whose container vanished Failed/Lost, not re-run', function () {
    const p = plan(input({ specs: [spec('a')], statuses: statuses(status('a')) }));
    expect(golden(p)).to.deep.equal([
      'attempt a: finish (container vanished)',
      '  * finish Failed  attempt:a  (container vanished)',
      'Plan: 1 attempt to change (1 operations), 0 unchanged.',
    ]);
  });

  it('adopts a running container it has no record of', function () {
    const p = plan(input({ specs: [spec('a')], snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }) }));
    expect(golden(p)[1]).to.equal('  = adopt  container:berth-default-a  (no status record)');
  });

  it('redoes an interrupted provisioning: a created, never started container is replaced', function () {
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'created' })] }),
        statuses: statuses(status('a', { phase: 'Pending', startedAt: undefined, intent: { action: 'provision', run: 1, specHash: 'h-a', at: '2026-01-01T00:00:00.000Z' } })),
      }),
    );
    expect(golden(p).slice(1, 4)).to.deep.equal([
      '  - remove  container:berth-default-a  (created but never started: provisioning was interrupted)',
      '  + create  container:berth-default-a  (not found)',
      '  > start   container:berth-default-a  (created)',
    ]);
  });

  it('deep-attests a running attempt when its last inspect is older than the interval', function () {
    const p = plan(
      input({ specs: [spec('a')], snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }), statuses: statuses(status('a', { lastAttestation: undefined })) }),
    );
    expect(golden(p)[1]).to.equal('  ? attest  container:berth-default-a  (never attested by inspect)');
  });

  it('admits at most --max-running, in name order; the rest wait Pending', function () {
    const p = plan(input({ maxRunning: 2, specs: ['d', 'b', 'a', 'c'].map((n) => spec(n)), snapshot: snapshot({}) }));
    expect(p.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['a:provision', 'b:provision', 'c:wait', 'd:wait']);
  });

  it('counts running attempts against --max-running', function () {
    const p = plan(
      input({ maxRunning: 1, specs: [spec('a'), spec('b')], snapshot: snapshot({ containers: [container('default', 'b', 'h-b')] }), statuses: statuses(status('b')) }),
    );
    expect(p.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['a:wait']);
  });

  it('retries a failed run after the back-off, with a new run number', function () {
    const rec = status('a', { phase: 'Failed', reason: 'Error', exitCode: 1, finishedAt: '2026-01-01T00:00:00.000Z' });
    const wait = plan(input({ now: Date.parse('2026-01-01T00:00:05.000Z'), specs: [spec('a', { retries: 2 })], statuses: statuses(rec) }));
    expect(wait.actions[0]?.kind).to.equal('wait');
    expect(wait.actions[0]?.requeueAfterMs).to.equal(5_000);
    const go = plan(input({ specs: [spec('a', { retries: 2 })], snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }), statuses: statuses(rec) }));
    expect(golden(go)).to.deep.equal([
      'attempt a: retry (run 1 Error; retry 1/2: run 2)',
      '  - remove  container:berth-default-a  (retry 1/2)',
      '  + create  container:berth-default-a  (not found)',
      '  > start   container:berth-default-a  (created)',
      'Plan: 1 attempt to change (3 operations), 0 unchanged.',
    ]);
  });

  it('does not retry a TimedOut or AttestationFailed run, nor beyond retries', function () {
    for (const rec of [
      status('a', { phase: 'TimedOut', reason: 'DeadlineExceeded', finishedAt: '2026-01-01T00:00:00.000Z' }),
      status('a', { phase: 'Failed', reason: 'AttestationFailed', finishedAt: '2026-01-01T00:00:00.000Z' }),
      status('a', { phase: 'Failed', reason: 'Error', retriesUsed: 2, finishedAt: '2026-01-01T00:00:00.000Z' }),
    ]) {
      expect(changeCount(plan(input({ specs: [spec('a', { retries: 2 })], statuses: statuses(rec) })))).to.equal(0);
    }
  });

  it('removes a finished attempt once its TTL passed; keeps it before', function () {
    const rec = status('a', { phase: 'Succeeded', finishedAt: '2026-01-01T00:00:30.000Z' });
    const obs = snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] });
    const early = plan(input({ specs: [spec('a', { ttlSecondsAfterFinished: 60 })], snapshot: obs, statuses: statuses(rec) }));
    expect(changeCount(early)).to.equal(0);
    expect(early.actions[0]?.requeueAfterMs).to.equal(30_000);
    const late = plan(input({ now: T0 + 30_000, specs: [spec('a', { ttlSecondsAfterFinished: 60 })], snapshot: obs, statuses: statuses(rec) }));
    expect(golden(late).slice(0, 2)).to.deep.equal(['attempt a: expire (finished Succeeded; ttlSecondsAfterFinished 60 passed)', '  - remove          container:berth-default-a  (ttl expired)']);
  });

  it('reports a name held by a container whose labels come from its image: Blocked, untouched', function () {
    const squatter = container('default', 'a', 'h-a', { id: 'foreign1234567890' });
    const p = plan(input({ specs: [spec('a')], snapshot: snapshot({ foreign: [squatter] }) }));
    expect(p.actions[0]?.kind).to.equal('block');
    expect(p.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['record']);
    expect(JSON.stringify(p)).to.not.include('remove');
  });

  it('orders attempts by name whatever order specs and the engine give', function () {
    const names = ['m', 'c', 'x', 'a'];
    const p1 = plan(input({ specs: names.map((n) => spec(n)) }));
    const p2 = plan(input({ specs: [...names].reverse().map((n) => spec(n)) }));
    expect(renderPlan(p1)).to.equal(renderPlan(p2));
    expect(p1.actions.map((a) => a.attempt)).to.deep.equal(['a', 'c', 'm', 'x']);
  });
});

describe('planner (blocked attempts)', function () {
  it('tries a Blocked attempt again only after a while, and says when', function () {
    const rec = status('a', { phase: 'Blocked', reason: 'SecretMissing', message: 'secret key: environment variable K is not set', containerId: undefined, startedAt: undefined, updatedAt: new Date(T0 - 5_000).toISOString() });
    const soon = plan(input({ specs: [spec('a')], statuses: statuses(rec) }));
    expect(soon.actions[0]?.kind).to.equal('block');
    expect(changeCount(soon)).to.equal(0);
    expect(soon.actions[0]?.requeueAfterMs).to.equal(10_000);
    const later = plan(input({ now: T0 + 10_000, specs: [spec('a')], statuses: statuses(rec) }));
    expect(later.actions[0]?.kind).to.equal('provision');
  });
});

describe('planner (interrupted provisioning)', function () {
  it('only starts a created container whose copy was recorded done (a start may be in flight)', function () {
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'created' })] }),
        statuses: statuses(status('a', { phase: 'Pending', startedAt: undefined, intent: { action: 'provision', run: 1, specHash: 'h-a', at: '2026-01-01T00:00:00.000Z', copied: true } })),
      }),
    );
    expect(golden(p).slice(1, 2)).to.deep.equal(['  > start  container:berth-default-a  (created; fixture and secrets already copied)']);
    expect(p.actions[0]?.ops).to.have.length(1);
  });
});

describe('planner (a controller batch)', function () {
  it('plans only the given keys, counting everything running and reserved slots for admission', function () {
    const p = plan(
      input({
        maxRunning: 2,
        only: new Set(['c', 'd']),
        reservedSlots: 0,
        specs: [spec('a'), spec('b'), spec('c'), spec('d')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }),
        statuses: statuses(status('a')),
      }),
    );
    expect(p.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['c:provision', 'd:wait']);
    const reserved = plan(input({ maxRunning: 2, only: new Set(['c']), reservedSlots: 1, specs: [spec('a'), spec('c')], snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }), statuses: statuses(status('a')) }));
    expect(reserved.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['c:wait']);
  });
});

describe('planner (egress proxy and sidecars)', function () {
  const tools = { name: 'tools', image: 'berth/busybox:local', command: ['sleep', '300'], env: {}, secretEnv: {}, secrets: [] };
  const eg = () => spec('e', { network: { mode: 'isolated', egress: ['api.example.com:443'] }, sidecars: [tools] });
  const proxyC = (over = {}) => ({ ...container('default', 'e', 'h-e'), id: 'id-proxy', name: 'berth-default-e-sc-egress-proxy', labels: { ...container('default', 'e', 'h-e').labels, 'dev.berth.component': 'egress-proxy', 'dev.berth.sidecar': 'egress-proxy' }, networks: ['berth-default-e', 'berth-default-e-egress'], networkMode: 'berth-default-e', mounts: [], image: 'berth/egress-proxy:local', ...over });
  const toolsC = (over = {}) => ({ ...container('default', 'e', 'h-e'), id: 'id-tools', name: 'berth-default-e-sc-tools', labels: { ...container('default', 'e', 'h-e').labels, 'dev.berth.component': 'sidecar', 'dev.berth.sidecar': 'tools' }, networks: ['berth-default-e'], networkMode: 'berth-default-e', mounts: [], ...over });
  const mainC = (over = {}) => container('default', 'e', 'h-e', { networks: ['berth-default-e'], networkMode: 'berth-default-e', ...over });
  const nets = [network('default', 'e', 'h-e'), network('default', 'e', 'h-e', { id: 'net-e-egress', name: 'berth-default-e-egress', internal: false, labels: { ...network('default', 'e', 'h-e').labels, 'dev.berth.component': 'egress-network' } })];

  it('provisions networks, then the proxy and sidecars, then the main container', function () {
    expect(golden(plan(input({ specs: [eg()] })))).to.deep.equal([
      'attempt e: provision (not found: run 1)',
      '  + create  network:berth-default-e                    (not found)',
      '  + create  network:berth-default-e-egress             (not found)',
      '  + create  container:berth-default-e-sc-egress-proxy  (not found)',
      '  + create  container:berth-default-e-sc-tools         (not found)',
      '  + create  container:berth-default-e                  (not found)',
      '  > start   container:berth-default-e                  (created)',
      'Plan: 1 attempt to change (6 operations), 0 unchanged.',
    ]);
    const d = plan(input({ specs: [eg()] })).actions[0]?.desired;
    expect(d?.sidecars.map((s) => [s.alias, s.expectedNetworks])).to.deep.equal([
      ['egress-proxy', ['berth-default-e', 'berth-default-e-egress']],
      ['tools', ['berth-default-e']],
    ]);
    expect(d?.container.create.env).to.include('HTTPS_PROXY=http://egress-proxy:3128');
    expect(d?.sidecars[0]?.create.env).to.include('BERTH_EGRESS_ALLOW=api.example.com:443');
  });

  it('is a no-op when the whole topology attests from the list', function () {
    const p = plan(input({ specs: [eg()], snapshot: snapshot({ containers: [mainC(), proxyC(), toolsC()], networks: nets }), statuses: statuses(status('e')) }));
    expect(golden(p)).to.deep.equal(['No changes: 1 attempt as specified.']);
  });

  it('starts a sidecar again when it dies while the attempt runs', function () {
    const p = plan(input({ specs: [eg()], snapshot: snapshot({ containers: [mainC(), proxyC({ state: 'exited' }), toolsC()], networks: nets }), statuses: statuses(status('e')) }));
    expect(golden(p)).to.deep.equal([
      'attempt e: restart (a sidecar is not running)',
      '  - remove  container:berth-default-e-sc-egress-proxy  (egress-proxy exited while the attempt runs)',
      '  + create  container:berth-default-e-sc-egress-proxy  (egress-proxy exited while the attempt runs)',
      'Plan: 1 attempt to change (2 operations), 0 unchanged.',
    ]);
  });

  it('fails the attempt when the main container is put on the egress network (the proxy must be the only one)', function () {
    const p = plan(input({ specs: [eg()], snapshot: snapshot({ containers: [mainC({ networks: ['berth-default-e', 'berth-default-e-egress'] }), proxyC(), toolsC()], networks: nets }), statuses: statuses(status('e')) }));
    expect(p.actions[0]?.kind).to.equal('stop');
    expect(p.actions[0]?.summary).to.match(/attached to network berth-default-e-egress/);
    expect(p.actions[0]?.ops.map((o) => `${o.type} ${o.resource}`)).to.deep.equal([
      'stop container:berth-default-e',
      'stop container:berth-default-e-sc-egress-proxy',
      'stop container:berth-default-e-sc-tools',
      'finish container:berth-default-e',
    ]);
  });

  it('stops the sidecars when the main container exits, then harvests', function () {
    const p = plan(input({ specs: [eg()], snapshot: snapshot({ containers: [mainC({ state: 'exited' }), proxyC(), toolsC()], networks: nets }), statuses: statuses(status('e')) }));
    const ops = p.actions[0]?.ops ?? [];
    expect(ops.map((o) => `${o.type} ${o.resource}`)).to.deep.equal(['stop container:berth-default-e-sc-egress-proxy', 'stop container:berth-default-e-sc-tools', 'finish container:berth-default-e']);
    const fin = ops[2];
    expect(fin?.type === 'finish' ? fin.sidecars?.map((x) => x.alias) : []).to.deep.equal(['egress-proxy', 'tools']);
  });
});

describe('planner: networks that share a name', function () {
  // Two writers racing made two networks of one name (the engine's duplicate check is not atomic).
  const iso = { network: { mode: 'isolated' as const, egress: [] } };
  const nets = [
    network('default', 'b', 'h-b', { id: 'net-2', created: '2026-01-01T00:00:02.5Z' }),
    network('default', 'b', 'h-b', { id: 'net-1', created: '2026-01-01T00:00:02.25Z' }),
  ];
  const removed = (p: ReturnType<typeof plan>) => p.actions.flatMap((a) => a.ops).flatMap((o) => (o.type === 'remove-network' ? [o.id] : []));

  it('keeps the oldest when no container is attached, removes the other, then provisions', function () {
    const rec = status('b', { phase: 'Pending', reason: 'CreateFailed', startedAt: undefined, containerId: undefined, updatedAt: '2025-01-01T00:00:00.000Z' });
    const p = plan(input({ specs: [spec('b', iso)], snapshot: snapshot({ networks: nets }), statuses: statuses(rec) }));
    expect(golden(p)).to.deep.equal([
      'attempt b: provision (not found: run 1)',
      '  - remove  network:berth-default-b    (another network has the same name)',
      '  + create  container:berth-default-b  (not found)',
      '  > start   container:berth-default-b  (created)',
      'Plan: 1 attempt to change (3 operations), 0 unchanged.',
    ]);
    expect(removed(p)).to.deep.equal(['net-2']);
  });

  it('keeps the one the attempt’s containers are attached to, even when it is the newer', function () {
    const main = container('default', 'b', 'h-b', { networks: ['berth-default-b'], networkIds: ['net-2'], networkMode: 'berth-default-b' });
    const p = plan(input({ specs: [spec('b', iso)], snapshot: snapshot({ containers: [main], networks: nets }), statuses: statuses(status('b')) }));
    expect(golden(p)).to.deep.equal([
      'attempt b: collect (running)',
      '  - remove  network:berth-default-b  (another network has the same name)',
      'Plan: 1 attempt to change (1 operations), 0 unchanged.',
    ]);
    expect(removed(p)).to.deep.equal(['net-1']);
  });

  it('without creation times, keeps the lowest id; one network per name is left alone', function () {
    const bare = nets.map(({ created: _created, ...n }) => n);
    const rec = status('b', { phase: 'Pending', reason: 'CreateFailed', startedAt: undefined, containerId: undefined, updatedAt: '2025-01-01T00:00:00.000Z' });
    expect(removed(plan(input({ specs: [spec('b', iso)], snapshot: snapshot({ networks: bare }), statuses: statuses(rec) })))).to.deep.equal(['net-2']);
    expect(removed(plan(input({ specs: [spec('b', iso)], snapshot: snapshot({ networks: [bare[0]!] }), statuses: statuses(rec) })))).to.deep.equal([]);
  });
});
