/** The planner's desired states are built on first use: once built, each is exactly what desiredAttempt() gives. */
import { expect } from 'chai';
import { COMPONENTS, LABELS, LEGACY_NAMING, NAMING } from '../../../src/constants';
import { desiredAttempt, desiredNames } from '../../../src/desired/attempt';
import { LazyDesired, namesOf } from '../../../src/desired/lazy';
import { plan } from '../../../src/plan/planner';
import { runResultsDir } from '../../../src/plan/results';
import { container, input, labelsFor, snapshot, spec, status, statuses } from '../../support/builders';

describe('planner: desired states built on first use', function () {
  it('a provisioned attempt carries the same desired state desiredAttempt() builds, field for field', function () {
    const loaded = spec('b-iso', {
      network: { mode: 'isolated', egress: ['example.com'] },
      volumes: [{ name: 'cache', mountPath: '/cache', readOnly: false, sizeBytes: null }],
    });
    const inp = input({ specs: [loaded] });
    const d = plan(inp).actions[0]?.desired;
    expect(d, 'the action has a desired state').to.not.equal(undefined);
    const want = desiredAttempt({ instance: inp.instance, policy: {} }, loaded, 1, runResultsDir(inp.resultsRoot, loaded.spec.results, 1));
    // JSON.parse(JSON.stringify()) compares the built value as plain data (getters included).
    expect(JSON.parse(JSON.stringify(d))).to.deep.equal(JSON.parse(JSON.stringify(want)));
    for (const k of Object.keys(want) as (keyof typeof want)[]) {
      if (k === 'loaded') continue;
      expect(d?.[k], k).to.deep.equal(want[k]);
    }
  });
});

describe('planner: a finished run is compared by name, its desired state not built', function () {
  const sidecar = (name: string, secrets: string[] = []) => ({ name, image: 'img', command: null, env: {}, secretEnv: {}, secrets });
  const shapes = {
    plain: spec('p'),
    secret: spec('s', { secrets: [{ name: 'tok', fromEnv: 'TOK' }] }),
    egress: spec('e', {
      network: { mode: 'isolated', egress: ['example.com'] },
      sidecars: [sidecar('db', ['tok']), sidecar('cache')],
      secrets: [
        { name: 'tok', fromEnv: 'TOK' },
        { name: 'key', fromEnv: 'KEY' },
      ],
    }),
    isolated: spec('i', { network: { mode: 'isolated', egress: [] }, sidecars: [sidecar('db')] }),
  };

  it('desiredNames() gives the names and secret holders desiredAttempt() builds, for every naming and egress setting', function () {
    for (const [shape, loaded] of Object.entries(shapes)) {
      for (const ctx of [
        { instance: 'x', policy: {} },
        { instance: 'x', policy: {}, naming: LEGACY_NAMING },
        { instance: 'x', policy: { egress: { network: 'out', proxyImage: 'proxy:1' } } },
      ]) {
        const full = desiredAttempt(ctx, loaded, 2, '/r/x');
        const names = desiredNames(ctx, loaded);
        const label = `${shape} ${JSON.stringify(ctx)}`;
        expect(names.container, label).to.equal(full.container.name);
        expect(
          names.sidecars.map((sc) => ({ name: sc.name, secrets: [...sc.secrets] })),
          label,
        ).to.deep.equal(full.sidecars.map((sc) => ({ name: sc.name, secrets: sc.secrets })));
        expect(names.mainSecrets, label).to.deep.equal(full.mainSecrets);
        expect(namesOf(full), label).to.deep.equal({ container: full.container.name, sidecars: full.sidecars, mainSecrets: full.mainSecrets });
      }
    }
    expect(desiredNames({ instance: 'x', policy: {} }, shapes.egress).sidecars.length, 'the proxy and two sidecars').to.equal(3);
  });

  it('a pass over finished runs whose containers stay plans nothing and builds no desired state; a secret holder is still removed', function () {
    const specs = Object.values(shapes);
    const done = (name: string) => status(name, { phase: 'Succeeded', finishedAt: '2026-01-01T00:00:40.000Z' });
    // The secret holder of `s` was removed after its harvest; `e`'s main (it holds `key`) and its sidecar `db` (`tok`) are still there.
    const containers = specs
      .filter((l) => l.spec.name !== 's')
      .map((l) => container('default', l.spec.name, l.hash, { state: 'exited', status: 'Exited (0)' }));
    const db = container('default', 'e', 'h-e', {
      id: 'id-e-db',
      name: NAMING.sidecar('default', 'e', 'db'),
      state: 'exited',
      labels: { ...labelsFor('default', 'e', 'h-e', 1, COMPONENTS.sidecar), [LABELS.sidecar]: 'db' },
    });
    const inp = input({ specs, snapshot: snapshot({ containers: [...containers, db] }), statuses: statuses(...specs.map((l) => done(l.spec.name))) });
    const p = plan(inp);
    expect(p.actions.map((a) => [a.attempt, a.kind, a.ops.map((o) => `${o.type} ${o.resource}`)])).to.deep.equal([
      [
        'e',
        'collect',
        [`remove-container container:${NAMING.container('default', 'e')}`, `remove-container container:${NAMING.sidecar('default', 'e', 'db')}`],
      ],
    ]);
    expect([...p.unchanged.keys()].sort()).to.deep.equal(['i', 'p', 's']);
    for (const loaded of specs) {
      const d = inp.desired.get(inp, loaded, 1);
      expect(d instanceof LazyDesired && !d.isBuilt, `${loaded.spec.name}: not built`).to.equal(true);
    }
    // Asked for, it is the same value as ever.
    const e = inp.desired.get(inp, shapes.egress, 1);
    expect(e.container.name).to.equal(NAMING.container('default', 'e'));
    expect(e instanceof LazyDesired && e.isBuilt).to.equal(true);
  });
});
