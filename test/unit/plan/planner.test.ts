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
          spec('b-iso', { network: { mode: 'isolated', egress: [] }, volumes: [{ name: 'cache', mountPath: '/cache', readOnly: false, sizeBytes: null }] }),
          spec('a-hello'),
        ],
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt a-hello: provision (not found: run 1)',
      '  ~ begin run     attempt:a-hello                  (run 1: results folder made, intent recorded)',
      '  + create        container:berth_default_a-hello  (not found)',
      '  ~ mark copied   attempt:a-hello                  (a start may follow from here on)',
      '  > start         container:berth_default_a-hello  (created)',
      '  ? attest start  container:berth_default_a-hello  (started)',
      'attempt b-iso: provision (not found: run 1)',
      '  + create        volume:berth_default_b-iso_v_cache  (not found)',
      '  + create        network:berth_default_b-iso         (not found)',
      '  ~ begin run     attempt:b-iso                       (run 1: results folder made, intent recorded)',
      '  + create        container:berth_default_b-iso       (not found)',
      '  ~ mark copied   attempt:b-iso                       (a start may follow from here on)',
      '  > start         container:berth_default_b-iso       (created)',
      '  ? attest start  container:berth_default_b-iso       (started)',
      'Plan: 2 attempts to change (12 operations), 0 unchanged.',
    ]);
  });

  it('provisions the main container one engine call per operation: create, each archive copied in, the copy recorded, start, attest', function () {
    const p = plan(
      input({
        specs: [
          spec('a', {
            fixture: '/fixtures/a',
            fixtureDigest: 'x',
            fixtureLayers: [{ path: '/fixtures/a', digest: 'x' }],
            secrets: [{ name: 'tok', fromEnv: 'TOK' }],
          }),
        ],
        snapshot: { ...snapshot({}), boot: { id: 'b1', at: '2026-01-01T00:00:00Z' } },
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt a: provision (not found: run 1)',
      '  ~ begin run     attempt:a                  (run 1: results folder made, intent recorded)',
      '  + create        container:berth_default_a  (not found)',
      '  + copy fixture  container:berth_default_a  (the fixture)',
      '  + copy secrets  container:berth_default_a  (1 secret for /run/secrets)',
      '  ~ mark copied   attempt:a                  (a start may follow from here on)',
      '  > start         container:berth_default_a  (created)',
      '  ? attest start  container:berth_default_a  (started)',
      'Plan: 1 attempt to change (7 operations), 0 unchanged.',
    ]);
    // the boot the plan saw is what the copy record carries (recorded before the start)
    expect(p.actions[0]?.ops.find((o) => o.type === 'record-copied')).to.deep.include({ boot: { id: 'b1', at: '2026-01-01T00:00:00Z' } });
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
      '  - remove        container:berth_default_a  (spec hash changed)',
      '  ~ begin run     attempt:a                  (run 2: results folder made, intent recorded)',
      '  + create        container:berth_default_a  (not found)',
      '  ~ mark copied   attempt:a                  (a start may follow from here on)',
      '  > start         container:berth_default_a  (created)',
      '  ? attest start  container:berth_default_a  (started)',
      'Plan: 1 attempt to change (6 operations), 0 unchanged.',
    ]);
    const d = p.actions[0]?.desired;
    expect(d?.run).to.equal(2);
    expect(d?.resultsDir).to.equal('/r/a/run-2/results');
  });

  it('stops and finishes a running spec-changed attempt before replacing it', function () {
    const p = plan(
      input({ specs: [spec('a', {}, 'h-new')], snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }), statuses: statuses(status('a')) }),
    );
    expect(golden(p).slice(0, 4)).to.deep.equal([
      'attempt a: replace (spec hash changed: run 2)',
      '  ! stop           container:berth_default_a  (spec hash changed)',
      '  * finish Failed  attempt:a                  (spec hash changed)',
      '  - remove         container:berth_default_a  (spec hash changed)',
    ]);
  });

  it('collects an attempt with no spec: containers, then networks, then volumes', function () {
    const p = plan(
      input({
        allowEmpty: true,
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
      '  - remove  container:berth_default_gone       (no spec)',
      '  - remove  network:berth_default_gone         (no spec)',
      '  - remove  volume:berth_default_gone_v_cache  (no spec)',
      '  - forget  attempt:gone                       (no spec)',
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
    const p = plan(input({ specs: [spec('b')], unreadableFiles: new Set(['a.yaml']), snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }) }));
    expect(p.actions.find((a) => a.attempt === 'a')?.ops ?? []).to.deep.equal([]);
  });

  it('leaves alone what a spec file in a folder that cannot be read declared', function () {
    const gone = container('default', 'a', 'h-a', { labels: { ...container('default', 'a', 'h-a').labels, 'dev.berth.source': 'suite/x/a.yaml' } });
    const p = plan(
      input({
        specs: [spec('b')],
        unreadableFolders: new Set(['suite']),
        snapshot: snapshot({ containers: [gone] }),
        statuses: statuses(status('a', { source: 'suite/x/a.yaml' })),
      }),
    );
    expect(p.actions.find((a) => a.attempt === 'a')?.ops ?? []).to.deep.equal([]);
    const readable = plan(
      input({
        specs: [spec('b')],
        unreadableFolders: new Set(['suit']),
        snapshot: snapshot({ containers: [gone] }),
        statuses: statuses(status('a', { source: 'suite/x/a.yaml' })),
      }),
    );
    expect(readable.actions.find((a) => a.attempt === 'a')?.kind).to.equal('collect');
  });

  it('a source that yields no attempts removes nothing unless --allow-empty', function () {
    const over = {
      snapshot: snapshot({ containers: [container('default', 'a', 'h-a')], networks: [network('default', 'a', 'h-a')] }),
      statuses: statuses(status('a'), status('b', { phase: 'Succeeded', finishedAt: '2026-01-01T00:00:40.000Z' })),
    };
    const held = plan(input(over));
    expect(changeCount(held)).to.equal(0);
    expect(held.emptySource).to.equal('held');
    expect(golden(held)).to.deep.equal([
      'The specs source yields no attempts while the instance has 2: nothing is removed (--allow-empty removes them).',
      'No changes: 2 attempts as specified.',
    ]);
    const allowed = plan(input({ ...over, allowEmpty: true }));
    expect(allowed.emptySource).to.equal('allowed');
    expect(allowed.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['a:collect', 'b:forget']);
    // A source with one attempt prunes the others as usual.
    const one = plan(input({ ...over, specs: [spec('c')] }));
    expect(one.emptySource).to.equal(undefined);
    expect(one.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['c:provision', 'a:collect', 'b:forget']);
    // An invalid spec is an attempt the source yields: what runs under it is protected by name.
    expect(plan(input({ ...over, protectedNames: new Set(['x']) })).emptySource).to.equal(undefined);
    // nothing declared, and the instance has nothing either (no record, nothing on the engine): 'empty' (the CLI refuses it)
    expect(plan(input()).emptySource).to.equal('empty');
    expect(plan(input({ allowEmpty: true })).emptySource).to.equal('empty');
    // a file that cannot be read may declare something: not empty
    expect(plan(input({ unreadableFiles: new Set(['a.yaml']) })).emptySource).to.equal(undefined);
  });

  it('a run that began under the old names keeps them until it ends; the next run takes the new ones', function () {
    const legacyMain = container('default', 'a', 'h-a', { name: 'berth-default-a', networks: ['berth-default-a'], networkMode: 'berth-default-a' });
    const legacyNet = network('default', 'a', 'h-a', { name: 'berth-default-a' });
    const iso = spec('a', { network: { mode: 'isolated', egress: [] }, retries: 1 }, 'h-a');
    // Running under old names: attested from the list as it is, nothing to change.
    const running = plan(input({ specs: [iso], snapshot: snapshot({ containers: [legacyMain], networks: [legacyNet] }), statuses: statuses(status('a')) }));
    expect(changeCount(running)).to.equal(0);
    // Failed and retried: the old run's container and network go, the new run has the new names.
    const retry = plan(
      input({
        specs: [iso],
        snapshot: snapshot({ containers: [{ ...legacyMain, state: 'exited' }], networks: [legacyNet] }),
        statuses: statuses(status('a', { phase: 'Failed', reason: 'Error', exitCode: 1, finishedAt: '2026-01-01T00:00:00.000Z' })),
      }),
    );
    expect(golden(retry)).to.deep.equal([
      'attempt a: retry (run 1 Error; retry 1/1: run 2)',
      '  - remove        container:berth-default-a  (retry 1/1)',
      '  - remove        network:berth-default-a    (named under an older naming)',
      '  + create        network:berth_default_a    (not found)',
      '  ~ begin run     attempt:a                  (run 2: results folder made, intent recorded)',
      '  + create        container:berth_default_a  (not found)',
      '  ~ mark copied   attempt:a                  (a start may follow from here on)',
      '  > start         container:berth_default_a  (created)',
      '  ? attest start  container:berth_default_a  (started)',
      'Plan: 1 attempt to change (8 operations), 0 unchanged.',
    ]);
  });

  it('a new run never reuses a run folder already on disk', function () {
    const p = plan(input({ specs: [spec('a')], runFloors: new Map([['a', 4]]) }));
    const d = p.actions[0]?.desired;
    expect(d?.run).to.equal(5);
    expect(d?.resultsDir).to.equal('/r/a/run-5/results');
    expect(d?.container.create.labels['dev.berth.run']).to.equal('5');
    // A floor below the run changes nothing.
    expect(plan(input({ specs: [spec('a')], runFloors: new Map([['a', 0]]) })).actions[0]?.desired?.run).to.equal(1);
    // A retry goes above the floor too.
    const retry = plan(
      input({
        specs: [spec('a', { retries: 1 })],
        statuses: statuses(status('a', { phase: 'Failed', reason: 'Error', exitCode: 1, finishedAt: '2026-01-01T00:00:00.000Z', run: 1 })),
        runFloors: new Map([['a', 7]]),
      }),
    );
    expect(retry.actions[0]?.desired?.run).to.equal(8);
  });

  it('records every error of an Invalid attempt, and records them again when they change', function () {
    const e1 = { file: 'specs/bad.yaml', line: 3, col: 9, path: 'spec.foo', code: 'schema', message: 'unknown field' };
    const e2 = { file: 'specs/bad.yaml', line: 5, col: 3, path: 'spec.retries', code: 'schema', message: 'must be at least 0 (got -1)' };
    const p = plan(input({ protectedNames: new Set(['bad']), invalid: new Map([['bad', [e1, e2]]]) }));
    const op = p.actions[0]?.ops[0];
    expect(op?.type === 'record' && op.patch).to.deep.include({
      phase: 'Invalid',
      reason: 'InvalidSpec',
      message: 'specs/bad.yaml:3:9: spec.foo: unknown field (and 1 more)',
      specErrors: [e1, e2],
    });
    const same = plan(
      input({
        protectedNames: new Set(['bad']),
        invalid: new Map([['bad', [e1, e2]]]),
        statuses: statuses(status('bad', { phase: 'Invalid', specErrors: [e1, e2] })),
      }),
    );
    expect(changeCount(same)).to.equal(0);
    const changed = plan(
      input({
        protectedNames: new Set(['bad']),
        invalid: new Map([['bad', [e2]]]),
        statuses: statuses(status('bad', { phase: 'Invalid', specErrors: [e1, e2] })),
      }),
    );
    expect(changeCount(changed)).to.equal(1);
    const dup = plan(
      input({
        protectedNames: new Set(['d']),
        invalid: new Map([['d', [{ ...e1, code: 'duplicate-name', path: 'metadata.name', message: 'name "d" is also declared at x.yaml:2:9' }]]]),
      }),
    );
    const dop = dup.actions[0]?.ops[0];
    expect(dop?.type === 'record' && dop.patch.reason).to.equal('DuplicateName');
  });

  it('marks a never-run invalid spec Invalid', function () {
    const p = plan(
      input({
        protectedNames: new Set(['bad']),
        invalid: new Map([['bad', [{ file: 'specs/bad.yaml', line: 3, col: 9, path: 'spec.foo', code: 'schema', message: 'unknown field' }]]]),
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt bad: invalid (specs/bad.yaml:3:9: spec.foo: unknown field)',
      '  ~ mark Invalid  attempt:bad  (spec invalid)',
      'Plan: 1 attempt to change (1 operations), 0 unchanged.',
    ]);
  });

  it('stops a running attempt attached to a network by hand: attestation failed', function () {
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { networks: ['bridge', 'none'] })] }),
        statuses: statuses(status('a')),
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt a: stop (attestation failed: attached to network bridge; spec allows none)',
      '  ! stop           container:berth_default_a  (attestation failed: attached to network bridge; spec allows none)',
      '  * finish Failed  container:berth_default_a  (attestation failed: attached to network bridge; spec allows none)',
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
      '  ! stop             container:berth_default_a  (deadlineSeconds 30 exceeded)',
      '  * finish TimedOut  container:berth_default_a  (deadlineSeconds 30 exceeded)',
    ]);
  });

  it('stops an attempt measured over its disk limit: Failed/DiskLimitExceeded, as at a deadline', function () {
    const usage = (bytes: number, containerId = 'id-a') =>
      new Map([['a', { containerId, at: T0, bytes, parts: { layer: bytes - 4096, results: 4096, volumes: 0 }, entries: 9, complete: true }]]);
    const base = {
      specs: [spec('a')],
      snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }),
      statuses: statuses(status('a', { disk: { bytes: 64 * 1024 * 1024, source: 'spec', enforcedBy: 'measured' } })),
    };
    const over = plan(input({ ...base, diskUsage: usage(65 * 1024 * 1024) }));
    const why = 'disk use 65 MiB exceeds resources.disk 64 MiB (writable layer 65 MiB, results 4 KiB, volumes 0 B; 9 entries)';
    expect(golden(over).slice(1, 3)).to.deep.equal([
      `  ! stop           container:berth_default_a  (${why})`,
      `  * finish Failed  container:berth_default_a  (${why})`,
    ]);
    const finish = over.actions[0]?.ops.find((o) => o.type === 'finish');
    expect(finish && 'outcome' in finish ? finish.outcome : undefined).to.deep.include({ phase: 'Failed', reason: 'DiskLimitExceeded' });
    // at the limit, or a measure of another container (an earlier run's), or no limit recorded: nothing
    expect(changeCount(plan(input({ ...base, diskUsage: usage(64 * 1024 * 1024) })))).to.equal(0);
    expect(changeCount(plan(input({ ...base, diskUsage: usage(65 * 1024 * 1024, 'id-old') })))).to.equal(0);
    expect(changeCount(plan(input({ ...base, statuses: statuses(status('a')), diskUsage: usage(65 * 1024 * 1024) })))).to.equal(0);
    // counted by a swarm node's engine: it names the counter, not entries it did not count
    const counted = {
      containerId: 'id-a',
      at: T0,
      bytes: 65 * 1024 * 1024,
      parts: { layer: 65 * 1024 * 1024 - 4096, results: 4096, volumes: 0 },
      entries: 0,
      complete: true,
    };
    const node = new Map([['a', { ...counted, countedBy: "node n1's engine" }]]);
    expect(golden(plan(input({ ...base, diskUsage: node })))[1]).to.include("(writable layer 65 MiB, results 4 KiB, volumes 0 B; counted by node n1's engine)");
    // a volume over its own size, with or without resources.disk
    const sizes = [{ name: 'data', mountPath: '/data', bytes: 8 * 1024 * 1024, enforcedBy: 'measured' as const }];
    const held = (mib: number) =>
      new Map([['a', { containerId: 'id-a', at: T0, bytes: 0, parts: {}, entries: 3, complete: true, sized: { data: mib * 1024 * 1024 } }]]);
    const sizedOnly = { ...base, statuses: statuses(status('a', { volumeSizes: sizes })) };
    const full = plan(input({ ...sizedOnly, diskUsage: held(9) }));
    expect(golden(full)[1]).to.include('(volume data (/data) holds 9 MiB, over its size 8 MiB)');
    const fin = full.actions[0]?.ops.find((o) => o.type === 'finish');
    expect(fin && 'outcome' in fin ? fin.outcome : undefined).to.deep.include({ phase: 'Failed', reason: 'DiskLimitExceeded' });
    expect(changeCount(plan(input({ ...sizedOnly, diskUsage: held(8) })))).to.equal(0);
  });

  it("attests a running attempt's volumes by driver and options, not only labels: one not as berth made it fails the attestation", function () {
    const withVol = spec('a', { volumes: [{ name: 'data', mountPath: '/data', readOnly: false, sizeBytes: null }] });
    const vol = volume('default', 'a', 'data', 'h-a');
    const mounted = container('default', 'a', 'h-a', {
      mounts: [
        { type: 'bind', source: '/r/a/run-1/results', destination: '/results', rw: true },
        { type: 'volume', source: `/var/lib/docker/volumes/${vol.name}/_data`, name: vol.name, destination: '/data', rw: true },
      ],
    });
    const at = (v: typeof vol) =>
      plan(input({ specs: [withVol], snapshot: snapshot({ containers: [mounted], volumes: [v] }), statuses: statuses(status('a')) }));
    expect(changeCount(at({ ...vol, options: {} }))).to.equal(0);
    const tmpfs = at({ ...vol, options: { type: 'tmpfs', device: 'tmpfs' } });
    expect(golden(tmpfs)[1]).to.equal(
      `  ! stop           container:berth_default_a  (attestation failed: ${vol.name}: driver local, device=tmpfs,type=tmpfs (berth made it local, no options))`,
    );
    expect(golden(at({ ...vol, driver: 'nfs-plugin', options: {} }))[1]).to.contain(
      `${vol.name}: driver nfs-plugin, no options (berth made it local, no options)`,
    );
  });

  it('requeues a running attempt at its deadline', function () {
    const p = plan(
      input({
        specs: [spec('a', { deadlineSeconds: 90 })],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }),
        statuses: statuses(status('a', { deadlineAt: '2026-01-01T00:01:30.000Z' })),
      }),
    );
    expect(changeCount(p)).to.equal(0);
    expect(p.actions[0]?.requeueAfterMs).to.equal(30_000);
  });

  it('finishes an exited container', function () {
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }),
        statuses: statuses(status('a')),
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt a: finish (container exited)',
      '  * finish  container:berth_default_a  (container exited)',
      'Plan: 1 attempt to change (1 operations), 0 unchanged.',
    ]);
  });

  it('removes the container right after the finish when it was given a secret, and any such container of a finished attempt', function () {
    const withSecret = spec('a', { secrets: [{ name: 'k', fromEnv: 'K' }] });
    const p = plan(
      input({
        specs: [withSecret],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }),
        statuses: statuses(status('a')),
      }),
    );
    expect(p.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['finish', 'remove-container']);
    // one left behind (a finish inside the executor, a berth killed before the removal): removed on the next pass
    const later = plan(
      input({
        specs: [withSecret],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }),
        statuses: statuses(status('a', { phase: 'Failed', reason: 'Error', finishedAt: '2026-01-01T00:00:40.000Z', exitCode: 1 })),
      }),
    );
    expect(later.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['remove-container']);
    // without secrets the container stays until its TTL, as before
    const none = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }),
        statuses: statuses(status('a')),
      }),
    );
    expect(none.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['finish']);
  });

  it("removes a finished attempt's leftovers, each with its cause: another hash's resources, an earlier run's container, a second main container; the run's own is kept", function () {
    const exited = { state: 'exited' };
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({
          containers: [
            container('default', 'a', 'h-a', { ...exited, run: 1, id: 'id-run1' }),
            container('default', 'a', 'h-old', { ...exited, id: 'id-old' }),
            container('default', 'a', 'h-a', { ...exited, run: 2, id: 'id-run2' }),
            container('default', 'a', 'h-a', { ...exited, run: 2, id: 'id-dup', name: 'berth_default_a_copy' }),
          ],
          networks: [network('default', 'a', 'h-old')],
          volumes: [volume('default', 'a', 'data', 'h-old')],
        }),
        statuses: statuses(status('a', { phase: 'Succeeded', run: 2, containerId: 'id-run2', finishedAt: '2026-01-01T00:00:40.000Z', exitCode: 0 })),
      }),
    );
    const ops = p.actions[0]?.ops.map((o) => `${o.type} ${'id' in o ? o.id : ''} (${o.cause})`);
    expect(ops).to.deep.equal([
      'remove-container id-old (spec hash changed)',
      'remove-network net-a (spec hash changed)',
      `remove-volume ${volume('default', 'a', 'data', 'h-old').name} (spec hash changed)`,
      'remove-container id-run1 (not the current run)',
      'remove-container id-dup (not the current run)',
    ]);
    // the same attempt with only its run's container: nothing to do
    const clean = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { ...exited, run: 2, id: 'id-run2' })] }),
        statuses: statuses(status('a', { phase: 'Succeeded', run: 2, containerId: 'id-run2', finishedAt: '2026-01-01T00:00:40.000Z', exitCode: 0 })),
      }),
    );
    expect(changeCount(clean)).to.equal(0);
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
    expect(golden(p)[1]).to.equal('  = adopt  container:berth_default_a  (no status record)');
  });

  it('redoes an interrupted provisioning: a created, never started container is replaced', function () {
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'created' })] }),
        statuses: statuses(
          status('a', { phase: 'Pending', startedAt: undefined, intent: { action: 'provision', run: 1, specHash: 'h-a', at: '2026-01-01T00:00:00.000Z' } }),
        ),
      }),
    );
    expect(golden(p).slice(1, 4)).to.deep.equal([
      '  - remove        container:berth_default_a  (created but never started: provisioning was interrupted)',
      '  ~ begin run     attempt:a                  (run 1: results folder made, intent recorded)',
      '  + create        container:berth_default_a  (not found)',
    ]);
  });

  it('deep-attests a running attempt when its last inspect is older than the interval', function () {
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }),
        statuses: statuses(status('a', { lastAttestation: undefined })),
      }),
    );
    expect(golden(p)[1]).to.equal('  ? attest  container:berth_default_a  (never attested by inspect)');
  });

  it('admits at most --max-running, in name order; the rest wait Pending', function () {
    const p = plan(input({ maxRunning: 2, specs: ['d', 'b', 'a', 'c'].map((n) => spec(n)), snapshot: snapshot({}) }));
    expect(p.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['a:provision', 'b:provision', 'c:wait', 'd:wait']);
  });

  it('counts running attempts against --max-running', function () {
    const p = plan(
      input({
        maxRunning: 1,
        specs: [spec('a'), spec('b')],
        snapshot: snapshot({ containers: [container('default', 'b', 'h-b')] }),
        statuses: statuses(status('b')),
      }),
    );
    expect(p.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['a:wait']);
  });

  it('retries a failed run after the back-off, with a new run number', function () {
    const rec = status('a', { phase: 'Failed', reason: 'Error', exitCode: 1, finishedAt: '2026-01-01T00:00:00.000Z' });
    const wait = plan(input({ now: Date.parse('2026-01-01T00:00:05.000Z'), specs: [spec('a', { retries: 2 })], statuses: statuses(rec) }));
    expect(wait.actions[0]?.kind).to.equal('wait');
    expect(wait.actions[0]?.requeueAfterMs).to.equal(5_000);
    const go = plan(
      input({
        specs: [spec('a', { retries: 2 })],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] }),
        statuses: statuses(rec),
      }),
    );
    expect(golden(go)).to.deep.equal([
      'attempt a: retry (run 1 Error; retry 1/2: run 2)',
      '  - remove        container:berth_default_a  (retry 1/2)',
      '  ~ begin run     attempt:a                  (run 2: results folder made, intent recorded)',
      '  + create        container:berth_default_a  (not found)',
      '  ~ mark copied   attempt:a                  (a start may follow from here on)',
      '  > start         container:berth_default_a  (created)',
      '  ? attest start  container:berth_default_a  (started)',
      'Plan: 1 attempt to change (6 operations), 0 unchanged.',
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
    expect(golden(late).slice(0, 2)).to.deep.equal([
      'attempt a: expire (finished Succeeded; ttlSecondsAfterFinished 60 passed)',
      '  - remove          container:berth_default_a  (ttl expired)',
    ]);
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
    const rec = status('a', {
      phase: 'Blocked',
      reason: 'SecretMissing',
      message: 'secret key: environment variable K is not set',
      containerId: undefined,
      startedAt: undefined,
      updatedAt: new Date(T0 - 5_000).toISOString(),
    });
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
        statuses: statuses(
          status('a', {
            phase: 'Pending',
            startedAt: undefined,
            intent: { action: 'provision', run: 1, specHash: 'h-a', at: '2026-01-01T00:00:00.000Z', copied: true },
          }),
        ),
      }),
    );
    expect(golden(p).slice(1)).to.deep.equal([
      '  > start         container:berth_default_a  (created; fixture and secrets already copied)',
      '  ? attest start  container:berth_default_a  (started)',
      'Plan: 1 attempt to change (2 operations), 0 unchanged.',
    ]);
    // only the start and what follows it: nothing is made or copied again
    expect(p.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['start', 'attest-start']);
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
    const reserved = plan(
      input({
        maxRunning: 2,
        only: new Set(['c']),
        reservedSlots: 1,
        specs: [spec('a'), spec('c')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a')] }),
        statuses: statuses(status('a')),
      }),
    );
    expect(reserved.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['c:wait']);
  });

  it("admits a batch's attempts in admission order whatever the order of the specs, and plans a key with a record and no spec", function () {
    const p = plan(
      input({
        maxRunning: 1,
        only: new Set(['z', 'b', 'gone']),
        reservedSlots: 0,
        specs: [spec('z'), spec('a'), spec('b')],
        snapshot: snapshot({}),
        statuses: statuses(status('gone')),
      }),
    );
    expect(p.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['b:provision', 'z:wait', 'gone:forget']);
  });
});

describe('planner (egress proxy and sidecars)', function () {
  const tools = { name: 'tools', image: 'berth/busybox:local', command: ['sleep', '300'], env: {}, secretEnv: {}, secrets: [] };
  const eg = () => spec('e', { network: { mode: 'isolated', egress: ['api.example.com:443'] }, sidecars: [tools] });
  const proxyC = (over = {}) => ({
    ...container('default', 'e', 'h-e'),
    id: 'id-proxy',
    name: 'berth_default_e_sc_egress-proxy',
    labels: { ...container('default', 'e', 'h-e').labels, 'dev.berth.component': 'egress-proxy', 'dev.berth.sidecar': 'egress-proxy' },
    networks: ['berth_default_e', 'berth_default_e_egress'],
    networkMode: 'berth_default_e',
    mounts: [],
    image: 'berth/egress-proxy:local',
    ...over,
  });
  const toolsC = (over = {}) => ({
    ...container('default', 'e', 'h-e'),
    id: 'id-tools',
    name: 'berth_default_e_sc_tools',
    labels: { ...container('default', 'e', 'h-e').labels, 'dev.berth.component': 'sidecar', 'dev.berth.sidecar': 'tools' },
    networks: ['berth_default_e'],
    networkMode: 'berth_default_e',
    mounts: [],
    ...over,
  });
  const mainC = (over = {}) => container('default', 'e', 'h-e', { networks: ['berth_default_e'], networkMode: 'berth_default_e', ...over });
  const nets = [
    network('default', 'e', 'h-e'),
    network('default', 'e', 'h-e', {
      id: 'net-e-egress',
      name: 'berth_default_e_egress',
      internal: false,
      labels: { ...network('default', 'e', 'h-e').labels, 'dev.berth.component': 'egress-network' },
    }),
  ];

  it('provisions networks, then the proxy and sidecars, then the main container', function () {
    expect(golden(plan(input({ specs: [eg()] })))).to.deep.equal([
      'attempt e: provision (not found: run 1)',
      '  + create        network:berth_default_e                    (not found)',
      '  + create        network:berth_default_e_egress             (not found)',
      '  ~ begin run     attempt:e                                  (run 1: results folder made, intent recorded)',
      '  + create        container:berth_default_e_sc_egress-proxy  (not found)',
      '  + connect       container:berth_default_e_sc_egress-proxy  (egress-proxy joins network berth_default_e_egress too)',
      '  > start         container:berth_default_e_sc_egress-proxy  (created)',
      '  ? await ready   container:berth_default_e_sc_egress-proxy  (until it says it is listening)',
      '  + create        container:berth_default_e_sc_tools         (not found)',
      '  > start         container:berth_default_e_sc_tools         (created)',
      '  ? await ready   container:berth_default_e_sc_tools         (until it has stayed up a moment)',
      '  + create        container:berth_default_e                  (not found)',
      '  ~ mark copied   attempt:e                                  (a start may follow from here on)',
      '  > start         container:berth_default_e                  (created)',
      '  ? attest start  container:berth_default_e                  (started)',
      'Plan: 1 attempt to change (14 operations), 0 unchanged.',
    ]);
    const d = plan(input({ specs: [eg()] })).actions[0]?.desired;
    expect(d?.sidecars.map((s) => [s.alias, s.expectedNetworks])).to.deep.equal([
      ['egress-proxy', ['berth_default_e', 'berth_default_e_egress']],
      ['tools', ['berth_default_e']],
    ]);
    expect(d?.container.create.env).to.include('HTTPS_PROXY=http://egress-proxy:3128');
    expect(d?.sidecars[0]?.create.env).to.include('BERTH_EGRESS_ALLOW=api.example.com:443');
  });

  it('is a no-op when the whole topology attests from the list', function () {
    const p = plan(
      input({ specs: [eg()], snapshot: snapshot({ containers: [mainC(), proxyC(), toolsC()], networks: nets }), statuses: statuses(status('e')) }),
    );
    expect(golden(p)).to.deep.equal(['No changes: 1 attempt as specified.']);
  });

  it('starts a sidecar again when it dies while the attempt runs', function () {
    const p = plan(
      input({
        specs: [eg()],
        snapshot: snapshot({ containers: [mainC(), proxyC({ state: 'exited' }), toolsC()], networks: nets }),
        statuses: statuses(status('e')),
      }),
    );
    expect(golden(p)).to.deep.equal([
      'attempt e: restart (a sidecar is not running)',
      '  - remove       container:berth_default_e_sc_egress-proxy  (egress-proxy exited while the attempt runs)',
      '  + create       container:berth_default_e_sc_egress-proxy  (egress-proxy exited while the attempt runs)',
      '  + connect      container:berth_default_e_sc_egress-proxy  (egress-proxy joins network berth_default_e_egress too)',
      '  > start        container:berth_default_e_sc_egress-proxy  (created)',
      '  ? await ready  container:berth_default_e_sc_egress-proxy  (until it says it is listening)',
      'Plan: 1 attempt to change (5 operations), 0 unchanged.',
    ]);
  });

  it('fails the attempt when the main container is put on the egress network (the proxy must be the only one)', function () {
    const p = plan(
      input({
        specs: [eg()],
        snapshot: snapshot({ containers: [mainC({ networks: ['berth_default_e', 'berth_default_e_egress'] }), proxyC(), toolsC()], networks: nets }),
        statuses: statuses(status('e')),
      }),
    );
    expect(p.actions[0]?.kind).to.equal('stop');
    expect(p.actions[0]?.summary).to.match(/attached to network berth_default_e_egress/);
    expect(p.actions[0]?.ops.map((o) => `${o.type} ${o.resource}`)).to.deep.equal([
      'stop container:berth_default_e',
      'stop container:berth_default_e_sc_egress-proxy',
      'stop container:berth_default_e_sc_tools',
      'finish container:berth_default_e',
    ]);
  });

  it('stops the sidecars when the main container exits, then harvests', function () {
    const p = plan(
      input({
        specs: [eg()],
        snapshot: snapshot({ containers: [mainC({ state: 'exited' }), proxyC(), toolsC()], networks: nets }),
        statuses: statuses(status('e')),
      }),
    );
    const ops = p.actions[0]?.ops ?? [];
    expect(ops.map((o) => `${o.type} ${o.resource}`)).to.deep.equal([
      'stop container:berth_default_e_sc_egress-proxy',
      'stop container:berth_default_e_sc_tools',
      'finish container:berth_default_e',
    ]);
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
      '  - remove        network:berth_default_b    (another network has the same name)',
      '  ~ begin run     attempt:b                  (run 1: results folder made, intent recorded)',
      '  + create        container:berth_default_b  (not found)',
      '  ~ mark copied   attempt:b                  (a start may follow from here on)',
      '  > start         container:berth_default_b  (created)',
      '  ? attest start  container:berth_default_b  (started)',
      'Plan: 1 attempt to change (6 operations), 0 unchanged.',
    ]);
    expect(removed(p)).to.deep.equal(['net-2']);
  });

  it('keeps the one the attempt’s containers are attached to, even when it is the newer', function () {
    const main = container('default', 'b', 'h-b', { networks: ['berth_default_b'], networkIds: ['net-2'], networkMode: 'berth_default_b' });
    const p = plan(input({ specs: [spec('b', iso)], snapshot: snapshot({ containers: [main], networks: nets }), statuses: statuses(status('b')) }));
    expect(golden(p)).to.deep.equal([
      'attempt b: collect (running)',
      '  - remove  network:berth_default_b  (another network has the same name)',
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
