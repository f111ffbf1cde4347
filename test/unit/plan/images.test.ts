/** The planner's preflight (ImageMissing before anything is made), a set's pinned image, and --default-deadline. */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { imageIndex, resolveImage, shortRef } from '../../../src/observe/images';
import { tagMoves } from '../../../src/observe/tag-moves';
import { plan } from '../../../src/plan/planner';
import { renderPlan } from '../../../src/plan/render';
import type { Operation } from '../../../src/plan/types';
import type { SetPins } from '../../../src/status/pins';
import type { LoadedSpec, SetPolicy } from '../../../src/spec/types';
import { container, input, snapshot, spec, status, statuses } from '../../support/builders';

const BUSY = `sha256:${'b'.repeat(64)}`;
const PROXY = `sha256:${'e'.repeat(64)}`;
const OTHER = `sha256:${'c'.repeat(64)}`;

/** A snapshot whose engine holds `images` (tags → id). */
function withImages(images: Record<string, string>, digests: Record<string, string[]> = {}) {
  const byId = new Map<string, string[]>();
  for (const [tag, id] of Object.entries(images)) byId.set(id, [...(byId.get(id) ?? []), tag]);
  return { ...snapshot({}), images: imageIndex([...byId].map(([id, tags]) => ({ id, tags, labels: {}, repoDigests: digests[id] ?? [] }))) };
}

function policy(over: Partial<SetPolicy> = {}): SetPolicy {
  return {
    name: 'set',
    axes: ['x'],
    maxParallel: null,
    failFast: false,
    maxFailed: null,
    score: null,
    infra: [],
    source: { file: 'specs/set.yaml', line: 1, col: 1 },
    templateHash: 't1',
    pinKey: 'k1',
    ...over,
  };
}

function child(p: SetPolicy, name: string, index: number, over: Partial<LoadedSpec['spec']> = {}): LoadedSpec {
  return { ...spec(name, over), set: { set: p, coords: { x: String(index) }, index } };
}

const engineOps = (ops: Operation[]) => ops.filter((o) => o.type !== 'record');
const createOf = (ops: Operation[]) => ops.find((o) => o.type === 'create-container') as Extract<Operation, { type: 'create-container' }> | undefined;

describe('observe/images: references as the engine lists them', function () {
  it('short forms: Docker Hub domain and library/ dropped, :latest added; digests and ids', function () {
    expect(shortRef('alpine')).to.equal('alpine:latest');
    expect(shortRef('docker.io/library/alpine:3.19')).to.equal('alpine:3.19');
    expect(shortRef('index.docker.io/user/img')).to.equal('user/img:latest');
    expect(shortRef('localhost:5000/x/y')).to.equal('localhost:5000/x/y:latest');
    expect(shortRef('registry.example.com:443/a:b')).to.equal('registry.example.com:443/a:b');
    expect(shortRef(`alpine@sha256:${'1'.repeat(64)}`)).to.equal(`alpine@sha256:${'1'.repeat(64)}`);
    const index = imageIndex([{ id: BUSY, tags: ['berth/busybox:local', 'alpine:latest'], labels: {}, repoDigests: [`alpine@sha256:${'1'.repeat(64)}`] }]);
    expect(resolveImage(index, 'docker.io/library/alpine')?.id).to.equal(BUSY);
    expect(resolveImage(index, `docker.io/library/alpine@sha256:${'1'.repeat(64)}`)?.id).to.equal(BUSY);
    expect(resolveImage(index, BUSY)?.id).to.equal(BUSY);
    expect(resolveImage(index, 'b'.repeat(64))?.id).to.equal(BUSY);
    expect(resolveImage(index, 'berth/busybox')).to.equal(undefined);
    expect(resolveImage(index, OTHER)).to.equal(undefined);
  });
});

describe('planner: image preflight', function () {
  it('an attempt whose image is missing is Blocked/ImageMissing with no create at all (no network, no volume); plan names the image', function () {
    const s = spec('a', {
      image: 'missing/img:1',
      network: { mode: 'isolated', egress: [] },
      volumes: [{ name: 'v', mountPath: '/v', readOnly: false, sizeBytes: null }],
    });
    const out = plan(input({ specs: [s, spec('b')], snapshot: withImages({ 'berth/busybox:local': BUSY }) }));
    const a = out.actions.find((x) => x.attempt === 'a');
    expect(a?.kind).to.equal('block');
    expect(engineOps(a?.ops ?? [])).to.deep.equal([]);
    expect(a?.ops).to.have.length(1);
    expect(a?.ops[0]).to.deep.include({ type: 'record' });
    expect((a?.ops[0] as Extract<Operation, { type: 'record' }>).patch).to.deep.include({ phase: 'Blocked', reason: REASONS.imageMissing });
    expect((a?.ops[0] as Extract<Operation, { type: 'record' }>).patch.message).to.contain('missing/img:1');
    expect(out.actions.find((x) => x.attempt === 'b')?.kind).to.equal('provision');
    expect(out.missingImages).to.deep.equal([{ image: 'missing/img:1', attempts: ['a'] }]);
    expect(renderPlan(out)).to.contain('Image missing/img:1 is not on the engine: 1 attempt blocked (ImageMissing): a');
  });

  it('a Blocked/ImageMissing attempt stays as it is while the image is missing (no write), and provisions at the first pass that lists it', function () {
    const s = spec('a', { image: 'late/img:1' });
    const first = plan(input({ specs: [s], snapshot: withImages({}) }));
    const rec = (first.actions[0]?.ops[0] as Extract<Operation, { type: 'record' }>).patch;
    const blocked = status('a', {
      phase: 'Blocked',
      reason: REASONS.imageMissing,
      message: rec.message,
      containerId: undefined,
      startedAt: undefined,
      updatedAt: '2026-01-01T00:00:59.000Z',
    });
    const again = plan(input({ specs: [s], snapshot: withImages({}), statuses: statuses(blocked) }));
    expect(again.actions).to.have.length(1);
    expect(again.actions[0]?.ops).to.deep.equal([]);
    expect(again.unchanged.get('a')).to.equal('Blocked');
    // no 15 s wait as other Blocked reasons have: the image is in every pass's lists
    const now = plan(input({ specs: [s], snapshot: withImages({ 'late/img:1': OTHER }), statuses: statuses(blocked) }));
    expect(now.actions[0]?.kind).to.equal('provision');
    expect(now.actions[0]?.ops.map((o) => o.type)).to.include('create-container');
  });

  it("a sidecar's image and the egress proxy's count too; the proxy's message says how to get it", function () {
    const s = spec('a', {
      network: { mode: 'isolated', egress: ['example.com'] },
      sidecars: [{ name: 'db', image: 'db/img:1', command: null, env: {}, secrets: [], secretEnv: {} }] as never,
    });
    const out = plan(input({ specs: [s], snapshot: withImages({ 'berth/busybox:local': BUSY }) }));
    const msg = (out.actions[0]?.ops[0] as Extract<Operation, { type: 'record' }>).patch.message ?? '';
    expect(msg).to.contain('the egress proxy image berth/egress-proxy:local is not on the engine (build it: make images');
    expect(msg).to.contain('image db/img:1 of sidecar db');
    expect(out.missingImages?.map((m) => m.image)).to.deep.equal(['berth/egress-proxy:local', 'db/img:1']);
    const ok = plan(input({ specs: [s], snapshot: withImages({ 'berth/busybox:local': BUSY, 'berth/egress-proxy:local': PROXY, 'db/img:1': OTHER }) }));
    expect(ok.actions[0]?.kind).to.equal('provision');
  });

  it("a set's children are all blocked when the image is missing, none created, maxParallel or not; they count toward no maxFailed", function () {
    const p = policy({ maxParallel: 1, maxFailed: 1 });
    const specs = [child(p, 'set-0', 0, { image: 'gone:1' }), child(p, 'set-1', 1, { image: 'gone:1' }), child(p, 'set-2', 2, { image: 'gone:1' })];
    const out = plan(input({ specs, snapshot: withImages({}) }));
    expect(out.actions.map((a) => [a.attempt, a.kind])).to.deep.equal([
      ['set-0', 'block'],
      ['set-1', 'block'],
      ['set-2', 'block'],
    ]);
    expect(out.actions.flatMap((a) => engineOps(a.ops))).to.deep.equal([]);
    const recs = out.actions.map((a) =>
      status(a.attempt, {
        phase: 'Blocked',
        reason: REASONS.imageMissing,
        message: (a.ops[0] as Extract<Operation, { type: 'record' }>).patch.message,
        containerId: undefined,
        startedAt: undefined,
      }),
    );
    const next = plan(input({ specs, snapshot: withImages({}), statuses: statuses(...recs) }));
    expect(next.actions.every((a) => a.ops.length === 0)).to.equal(true);
  });

  it("a child that waits for its set's slot is checked from its spec: its desired state is not built", function () {
    const p = policy({ maxParallel: 1 });
    const out = plan(input({ specs: [child(p, 'set-0', 0), child(p, 'set-1', 1)], snapshot: withImages({ 'berth/busybox:local': BUSY }) }));
    const waiting = out.actions.find((a) => a.attempt === 'set-1');
    expect(waiting?.kind).to.equal('wait');
    expect((waiting?.desired as unknown as { isBuilt: boolean }).isBuilt).to.equal(false);
  });

  it('without an image list in the snapshot nothing is checked (as before)', function () {
    const out = plan(input({ specs: [spec('a', { image: 'whatever:1' })] }));
    expect(out.actions[0]?.kind).to.equal('provision');
    expect(out.missingImages).to.equal(undefined);
  });
});

describe("planner: a set's pinned image", function () {
  it('the first child is made from the id its reference names now, pinned for the set; a plain attempt is made from its reference', function () {
    const p = policy();
    const out = plan(
      input({
        specs: [child(p, 'set-0', 0), child(p, 'set-1', 1), spec('solo')],
        snapshot: withImages({ 'berth/busybox:local': BUSY }, { [BUSY]: ['berth/busybox@sha256:d'] }),
      }),
    );
    for (const n of ['set-0', 'set-1']) {
      const c = createOf(out.actions.find((a) => a.attempt === n)?.ops ?? []);
      expect(c?.image).to.deep.equal({ id: BUSY, pin: { set: 'set', key: { pinKey: 'k1', templateHash: 't1' }, repoDigests: ['berth/busybox@sha256:d'] } });
    }
    expect(createOf(out.actions.find((a) => a.attempt === 'solo')?.ops ?? [])?.image).to.equal(undefined);
  });

  it('later children are made from the pinned id although the tag moved; an id that left the engine blocks them', function () {
    const p = policy();
    const pins: ReadonlyMap<string, SetPins> = new Map([
      ['set', { set: 'set', templateHash: 't1', images: { 'berth/busybox:local': { id: BUSY, repoDigests: [], at: 'x' } } }],
    ]);
    const moved = withImages({ 'berth/busybox:local': OTHER, keep: BUSY });
    const out = plan(input({ specs: [child(p, 'set-1', 1)], snapshot: moved, pins }));
    expect(createOf(out.actions[0]?.ops ?? [])?.image).to.deep.equal({ id: BUSY });
    expect(tagMoves(pins, [p], moved.images)).to.deep.equal([{ set: 'set', ref: 'berth/busybox:local', pinned: BUSY, now: OTHER }]);
    expect(tagMoves(pins, [p], withImages({ 'berth/busybox:local': BUSY }).images)).to.deep.equal([]);
    const gone = plan(input({ specs: [child(p, 'set-1', 1)], snapshot: withImages({ 'berth/busybox:local': OTHER }), pins }));
    expect(gone.actions[0]?.kind).to.equal('block');
    expect((gone.actions[0]?.ops[0] as Extract<Operation, { type: 'record' }>).patch.message).to.contain(`pinned for set set to ${BUSY}`);
  });

  it("a pin holds under its set's pin key: an edit no child's spec hash reads (another template hash, the same key) keeps it; another key pins anew", function () {
    const pins: ReadonlyMap<string, SetPins> = new Map([
      ['set', { set: 'set', templateHash: 't1', pinKey: 'k1', images: { 'berth/busybox:local': { id: BUSY, repoDigests: [], at: 'x' } } }],
    ]);
    const images = withImages({ 'berth/busybox:local': OTHER, keep: BUSY });
    const kept = plan(input({ specs: [child(policy({ templateHash: 't2' }), 'set-1', 1)], snapshot: images, pins }));
    expect(createOf(kept.actions[0]?.ops ?? [])?.image).to.deep.equal({ id: BUSY });
    const out = plan(input({ specs: [child(policy({ templateHash: 't2', pinKey: 'k2' }), 'set-1', 1)], snapshot: images, pins }));
    expect(createOf(out.actions[0]?.ops ?? [])?.image).to.deep.equal({
      id: OTHER,
      pin: { set: 'set', key: { pinKey: 'k2', templateHash: 't2' }, repoDigests: [] },
    });
    expect(tagMoves(pins, [policy({ templateHash: 't2', pinKey: 'k2' })], withImages({}).images)).to.deep.equal([]);
    // a file made before pin keys holds by its template hash alone
    const old: ReadonlyMap<string, SetPins> = new Map([
      ['set', { set: 'set', templateHash: 't1', images: { 'berth/busybox:local': { id: BUSY, repoDigests: [], at: 'x' } } }],
    ]);
    expect(createOf(plan(input({ specs: [child(policy(), 'set-1', 1)], snapshot: images, pins: old })).actions[0]?.ops ?? [])?.image).to.deep.equal({
      id: BUSY,
    });
    expect(
      createOf(plan(input({ specs: [child(policy({ templateHash: 't2' }), 'set-1', 1)], snapshot: images, pins: old })).actions[0]?.ops ?? [])?.image,
    ).to.deep.equal({
      id: OTHER,
      pin: { set: 'set', key: { pinKey: 'k1', templateHash: 't2' }, repoDigests: [] },
    });
  });

  it('list attestation of a running child made from the pinned id passes by the id its record names (and fails for another)', function () {
    const p = policy();
    const s = child(p, 'set-0', 0);
    const c = { ...snapshotContainer('set-0'), image: BUSY, imageId: BUSY };
    const rec = status('set-0', { image: { ref: 'berth/busybox:local', id: BUSY, repoDigests: [], pinned: true }, containerId: c.id });
    const ok = plan(input({ specs: [s], snapshot: { ...snapshot({ containers: [c] }) }, statuses: statuses(rec) }));
    expect(ok.actions).to.deep.equal([]);
    expect(ok.unchanged.get('set-0')).to.equal('Running');
    const other = plan(input({ specs: [s], snapshot: snapshot({ containers: [{ ...c, image: OTHER, imageId: OTHER }] }), statuses: statuses(rec) }));
    expect(other.actions.map((a) => [a.kind, a.summary])).to.deep.equal([
      ['stop', `attestation failed: image ${OTHER} (spec asks berth/busybox:local as ${BUSY})`],
    ]);
  });
});

describe('planner: --default-deadline', function () {
  it("is the deadline of a run whose spec sets none, the spec's own wins; it is no part of the spec hash", function () {
    const plain = spec('a');
    const own = spec('b', { deadlineSeconds: 5 });
    const out = plan(input({ specs: [plain, own], policy: { defaultDeadlineSeconds: 60 } }));
    const d = (n: string) => out.actions.find((a) => a.attempt === n)?.desired?.deadline;
    expect(d('a')).to.deep.equal({ seconds: 60, source: 'default' });
    expect(d('b')).to.deep.equal({ seconds: 5, source: 'spec' });
    const none = plan(input({ specs: [plain] }));
    expect(none.actions[0]?.desired?.deadline).to.equal(null);
    expect(none.actions[0]?.desired?.hash).to.equal(out.actions[0]?.desired?.hash);
  });

  it('a run that outlives its default deadline is stopped TimedOut, the message naming the default', function () {
    const s = spec('a');
    const c = snapshotContainer('a');
    const rec = status('a', { deadlineAt: '2026-01-01T00:00:30.000Z', deadlineSource: 'default' });
    const out = plan(input({ specs: [s], snapshot: snapshot({ containers: [c] }), statuses: statuses(rec), policy: { defaultDeadlineSeconds: 3600 } }));
    expect(out.actions[0]?.kind).to.equal('stop');
    expect(out.actions[0]?.summary).to.contain('default deadline 30s (--default-deadline) exceeded');
  });
});

function snapshotContainer(name: string) {
  return container('default', name, `h-${name}`, { id: `id-${name}` });
}
