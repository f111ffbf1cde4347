/** The pull gate (plan/pull-gate.ts, pull-window.ts): pulls asked for in admission order, the prefetch window, back-off, Always, a set's pinned digest. */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { imageIndex } from '../../../src/observe/images';
import { plan } from '../../../src/plan/planner';
import { pullBackoffMs, type ImagePullState, type PullInput } from '../../../src/plan/pull-gate';
import type { Operation, Plan } from '../../../src/plan/types';
import type { LoadedSpec, PullPolicy, SetPolicy } from '../../../src/spec/types';
import { container, input, snapshot, spec, status, statuses, T0 } from '../../support/builders';

const BUSY = `sha256:${'b'.repeat(64)}`;
const REG = '172.17.0.1:5000';

function withImages(images: Record<string, string>, digests: Record<string, string[]> = {}) {
  const byId = new Map<string, string[]>();
  for (const [tag, id] of Object.entries(images)) byId.set(id, [...(byId.get(id) ?? []), tag]);
  return { ...snapshot({}), images: imageIndex([...byId].map(([id, tags]) => ({ id, tags, labels: {}, repoDigests: digests[id] ?? [] }))) };
}

const pulls = (states: Record<string, ImagePullState> = {}, over: Partial<PullInput> = {}): PullInput => ({
  states: new Map(Object.entries(states)),
  prefetch: 2,
  ...over,
});
const img = (n: number) => `${REG}/evals/img${n}:1`;
const at = (name: string, image: string, policy: PullPolicy = 'IfNotPresent'): LoadedSpec =>
  spec(name, { image, pullPolicies: { main: policy, grade: policy, sidecars: {} } });
const patchOf = (p: Plan, name: string) =>
  (p.actions.find((a) => a.attempt === name)?.ops.find((o) => o.type === 'record') as Extract<Operation, { type: 'record' }> | undefined)?.patch;
const kindOf = (p: Plan, name: string) => p.actions.find((a) => a.attempt === name)?.kind;

describe('planner: pulls', function () {
  it('a missing image is pulled, not Blocked: Pending/Pulling, one request per image with its attempts in admission order; no puller: ImageMissing as before', function () {
    const specs = [at('a1', img(1)), at('a2', img(1)), at('b1', img(2))];
    const out = plan(input({ specs, snapshot: withImages({ 'berth/busybox:local': BUSY }), pulls: pulls(), maxRunning: 2 }));
    // a1 and a2 take the two free slots: their image is pulled now; b1's ahead (a prefetch)
    expect(out.pulls).to.deep.equal([
      { ref: img(1), attempts: ['a1', 'a2'], runs: ['a1#1', 'a2#1'] },
      { ref: img(2), attempts: ['b1'], runs: ['b1#1'], ahead: true },
    ]);
    for (const n of ['a1', 'a2', 'b1']) {
      expect(kindOf(out, n)).to.equal('wait');
      expect(patchOf(out, n)).to.deep.include({ phase: 'Pending', reason: REASONS.pulling });
    }
    expect(patchOf(out, 'a1')?.message).to.equal(`pulling image ${img(1)}`);
    const without = plan(input({ specs, snapshot: withImages({}) }));
    expect(patchOf(without, 'a1')).to.deep.include({ phase: 'Blocked', reason: REASONS.imageMissing });
    expect(without.pulls).to.equal(undefined);
  });

  it('prefetch: only the free slots plus --prefetch attempts ahead have their images pulled; the rest wait their turn', function () {
    const specs = [1, 2, 3, 4, 5, 6].map((n) => at(`a${n}`, img(n)));
    // two slots both busy: 0 free, prefetch 2
    const busy = ['r1', 'r2'].map((n) => container('default', n, `h-${n}`));
    const snap = { ...withImages({}), attempts: new Map(busy.map((c, i) => [`r${i + 1}`, { name: `r${i + 1}`, containers: [c], networks: [], volumes: [] }])) };
    const out = plan(input({ specs, snapshot: snap, pulls: pulls(), maxRunning: 2 }));
    expect(out.pulls?.map((r) => r.ref)).to.deep.equal([img(1), img(2)]);
    expect(patchOf(out, 'a3')).to.deep.include({ phase: 'Pending', reason: REASONS.waitingForSlot });
    expect(patchOf(out, 'a3')?.message).to.contain('waits its turn to pull (--prefetch 2)');
    // with 2 free slots: four ahead
    const free = plan(input({ specs, snapshot: withImages({}), pulls: pulls(), maxRunning: 2 }));
    expect(free.pulls?.map((r) => r.ref)).to.deep.equal([img(1), img(2), img(3), img(4)]);
  });

  it("prefetch: waiting attempts whose image is here take no place of the window, nor those riding on an earlier one's pull", function () {
    const specs = [at('a1', img(1)), at('a2', img(1)), at('b1', img(2)), at('b2', img(2)), at('c1', img(3))];
    const busy = ['r1', 'r2'].map((n) => container('default', n, `h-${n}`));
    const snap = {
      ...withImages({ [img(1)]: BUSY }),
      attempts: new Map(busy.map((c, i) => [`r${i + 1}`, { name: `r${i + 1}`, containers: [c], networks: [], volumes: [] }])),
    };
    const out = plan(input({ specs, snapshot: snap, pulls: pulls(), maxRunning: 2 }));
    // a1, a2 wait for a slot with their image here; b1 and b2 share one pull (one place), c1 takes the second
    expect(out.pulls?.map((r) => r.ref)).to.deep.equal([img(2), img(3)]);
    expect(out.pulls?.every((r) => r.ahead)).to.equal(true);
    expect(patchOf(out, 'a1')).to.deep.include({ reason: REASONS.waitingForSlot });
    expect(patchOf(out, 'c1')).to.deep.include({ reason: REASONS.pulling });
    // --prefetch 1: c1 waits its turn
    const one = plan(input({ specs, snapshot: snap, pulls: pulls({}, { prefetch: 1 }), maxRunning: 2 }));
    expect(one.pulls?.map((r) => r.ref)).to.deep.equal([img(2)]);
    expect(patchOf(one, 'c1')?.message).to.contain('waits its turn to pull (--prefetch 1)');
  });

  it('prefetch counts images, not attempts: 12 attempts over 6 images, both slots busy, --prefetch 2: the next two images (four attempts) are pulled ahead', function () {
    const specs = [0, 1, 2, 3, 4, 5].flatMap((i) => [at(`a${i}x`, img(i)), at(`a${i}y`, img(i))]);
    const busy = ['r1', 'r2'].map((n) => container('default', n, `h-${n}`));
    const snap = { ...withImages({}), attempts: new Map(busy.map((c, i) => [`r${i + 1}`, { name: `r${i + 1}`, containers: [c], networks: [], volumes: [] }])) };
    const out = plan(input({ specs, snapshot: snap, pulls: pulls(), maxRunning: 2 }));
    expect(out.pulls?.map((r) => [r.ref, r.attempts, r.ahead])).to.deep.equal([
      [img(0), ['a0x', 'a0y'], true],
      [img(1), ['a1x', 'a1y'], true],
    ]);
    expect(patchOf(out, 'a2x')?.message).to.contain('waits its turn to pull');
    // the first two images here (pulled while the slots ran): the next two are pulled
    const later = plan(
      input({
        specs,
        snapshot: { ...snap, images: withImages({ [img(0)]: BUSY, [img(1)]: `sha256:${'c'.repeat(64)}` }).images },
        pulls: pulls(),
        maxRunning: 2,
      }),
    );
    expect(later.pulls?.map((r) => r.ref)).to.deep.equal([img(2), img(3)]);
    // both slots free: the two attempts of image 0 take them (pulled now), images 1 and 2 ahead
    const free = plan(input({ specs, snapshot: withImages({}), pulls: pulls(), maxRunning: 2 }));
    expect(free.pulls?.map((r) => [r.ref, r.ahead ?? false])).to.deep.equal([
      [img(0), false],
      [img(1), true],
      [img(2), true],
    ]);
  });

  it('a request is ahead only while every attempt asking is: one a free slot waits for makes it a pull of now', function () {
    // b1 (image 2) takes the one free slot; b2 (image 2, asked ahead) rides on its pull; c1 (image 3) is ahead
    const specs = [at('b1', img(2)), at('c1', img(3)), at('b2', img(2))];
    const out = plan(input({ specs, snapshot: withImages({}), pulls: pulls(), maxRunning: 1 }));
    expect(out.pulls?.map((r) => [r.ref, r.attempts, r.ahead ?? false])).to.deep.equal([
      [img(2), ['b1', 'b2'], false],
      [img(3), ['c1'], true],
    ]);
  });

  it('an image that is present runs at once; one being pulled keeps its attempts Pending/Pulling (asked again: the puller joins them)', function () {
    const specs = [at('a', img(1)), at('b', img(2))];
    const out = plan(input({ specs, snapshot: withImages({ [img(2)]: BUSY }), pulls: pulls({ [img(1)]: { pulling: { since: T0, done: 5, total: 10 } } }) }));
    expect(kindOf(out, 'b')).to.equal('provision');
    expect(kindOf(out, 'a')).to.equal('wait');
    expect(out.pulls?.map((r) => r.ref)).to.deep.equal([img(1)]);
  });

  it('a failed pull: Blocked/ImagePullBackOff with the first and the latest failure, a requeue at the retry; past it, asked again', function () {
    const failed: ImagePullState = {
      failed: { kind: 'unauthorized', first: 'unauthorized at R: first words', latest: 'unauthorized at R: latest words', failures: 2, retryAt: T0 + 20_000 },
    };
    const specs = [at('a', img(1)), at('b', img(1))];
    const out = plan(input({ specs, snapshot: withImages({}), pulls: pulls({ [img(1)]: failed }) }));
    expect(kindOf(out, 'a')).to.equal('wait');
    expect(out.actions.find((x) => x.attempt === 'a')?.requeueAfterMs).to.equal(20_000);
    const p = patchOf(out, 'a');
    expect(p).to.deep.include({ phase: 'Blocked', reason: REASONS.imagePullBackOff });
    expect(p?.message).to.equal(
      `image ${img(1)}: pull failed: unauthorized at R: latest words (first failure: unauthorized at R: first words); next try in 20 s`,
    );
    expect(out.pulls).to.equal(undefined);
    const later = plan(input({ now: T0 + 20_000, specs, snapshot: withImages({}), pulls: pulls({ [img(1)]: failed }) }));
    expect(later.pulls?.map((r) => r.ref)).to.deep.equal([img(1)]);
  });

  it('--pull-retries (a finite run): an image failed that often settles its attempts Blocked (block, no requeue)', function () {
    const failed: ImagePullState = { failed: { kind: 'not-found', first: 'x', latest: 'x', failures: 3, retryAt: T0 + 1 } };
    const out = plan(input({ now: T0 + 5, specs: [at('a', img(1))], snapshot: withImages({}), pulls: pulls({ [img(1)]: failed }, { retries: 3 }) }));
    expect(kindOf(out, 'a')).to.equal('block');
    expect(out.actions[0]?.requeueAfterMs).to.equal(undefined);
    expect(patchOf(out, 'a')?.message).to.contain('given up after 3 failed pulls (--pull-retries 3)');
  });

  it('Never: a missing image is ImageMissing, never pulled; Always: pulled for every new run even when present, then run from it', function () {
    const never = plan(input({ specs: [at('n', img(1), 'Never')], snapshot: withImages({}), pulls: pulls() }));
    expect(patchOf(never, 'n')).to.deep.include({ phase: 'Blocked', reason: REASONS.imageMissing });
    expect(never.pulls).to.equal(undefined);
    const always = plan(input({ specs: [at('a', img(1), 'Always')], snapshot: withImages({ [img(1)]: BUSY }), pulls: pulls() }));
    expect(always.pulls?.map((r) => r.runs)).to.deep.equal([['a#1']]);
    const pulled = plan(
      input({
        specs: [at('a', img(1), 'Always')],
        snapshot: withImages({ [img(1)]: BUSY }),
        pulls: pulls({ [img(1)]: { pulled: { at: T0, id: BUSY, for: ['a#1'] } } }),
      }),
    );
    expect(kindOf(pulled, 'a')).to.equal('provision');
  });

  it("a set's child whose pinned id is gone is pulled by the pinned digest (name@sha256), not by the tag", function () {
    const p: SetPolicy = {
      name: 'set',
      axes: ['x'],
      maxParallel: null,
      failFast: false,
      maxFailed: null,
      score: null,
      infra: [],
      source: { file: 'specs/set.yaml', line: 1, col: 1 },
      templateHash: 't1',
    };
    const digest = `sha256:${'d'.repeat(64)}`;
    const c: LoadedSpec = { ...at('set-0', img(1)), set: { set: p, coords: { x: '0' }, index: 0 } };
    const pins = new Map([
      ['set', { set: 'set', templateHash: 't1', images: { [img(1)]: { id: BUSY, repoDigests: [`${REG}/evals/img1@${digest}`], at: 'x' } } }],
    ]);
    const out = plan(input({ specs: [c], snapshot: withImages({}), pins, pulls: pulls() }));
    expect(out.pulls?.map((r) => r.ref)).to.deep.equal([`${REG}/evals/img1@${digest}`]);
  });

  it('the back-off clock: 10 s doubling to 5 min; a Retry-After wins', function () {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => pullBackoffMs(n) / 1000)).to.deep.equal([10, 20, 40, 80, 160, 300, 300, 300]);
    expect(pullBackoffMs(3, 7000)).to.equal(7000);
  });

  it('a Pending/Pulling attempt already recorded so is not written again', function () {
    const s = at('a', img(1));
    const rec = status('a', { phase: 'Pending', reason: REASONS.pulling, message: `pulling image ${img(1)}`, containerId: undefined, startedAt: undefined });
    const out = plan(input({ specs: [s], snapshot: withImages({}), statuses: statuses(rec), pulls: pulls() }));
    expect(out.actions[0]?.ops).to.deep.equal([]);
    expect(out.pulls?.map((r) => r.ref)).to.deep.equal([img(1)]);
  });
});
