/**
 * The build gate: a new run whose image is built from a Dockerfile waits Pending/Building, asks the
 * builder once per build hash, and is Blocked/BuildFailed by a failed build until a rerun.
 */
import { expect } from 'chai';
import { buildTag, LABELS, REASONS } from '../../../src/constants';
import { imageIndex } from '../../../src/observe/images';
import type { ImageBuildState } from '../../../src/plan/build-gate';
import type { ImagePullState } from '../../../src/plan/pull-gate';
import { plan } from '../../../src/plan/planner';
import { renderPlan } from '../../../src/plan/render';
import type { Operation } from '../../../src/plan/types';
import type { NormalizedBuild } from '../../../src/spec/types';
import { input, snapshot, spec, status, statuses } from '../../support/builders';

const BUSY = `sha256:${'b'.repeat(64)}`;

function build(hash: string): NormalizedBuild {
  return { context: '/specs/env', dockerfile: 'Dockerfile', args: {}, target: null, network: false, hash, from: ['berth/busybox:local'] };
}
const H1 = '1'.repeat(64);
const H2 = '2'.repeat(64);

/** A snapshot whose engine holds busybox, and the built images given (tag → its label). */
function engineWith(builds: Record<string, string> = {}) {
  return {
    ...snapshot({}),
    images: imageIndex([
      { id: BUSY, tags: ['berth/busybox:local'], labels: {} },
      ...Object.entries(builds).map(([hash, label], i) => ({
        id: `sha256:${String(i).repeat(64)}`,
        tags: [buildTag(hash)],
        labels: { [LABELS.build]: label },
      })),
    ]),
  };
}

const recordOf = (ops: Operation[]) => (ops.find((o) => o.type === 'record') as Extract<Operation, { type: 'record' }> | undefined)?.patch;

describe('planner: images built from a Dockerfile', function () {
  it('a missing build waits Pending/Building; one request per build hash, its attempts in admission order, the widest limits', function () {
    const a = spec('a', { build: build(H1), image: buildTag(H1), resources: { cpus: 1, memoryBytes: 100, pids: 512, diskBytes: 1000 } });
    const b = spec('b', { build: build(H1), image: buildTag(H1), resources: { cpus: 2, memoryBytes: 50, pids: 512, diskBytes: 3000 } });
    const c = spec('c', { build: build(H2), image: buildTag(H2) });
    const out = plan(input({ specs: [c, b, a], snapshot: engineWith() }));
    for (const n of ['a', 'b', 'c']) {
      const act = out.actions.find((x) => x.attempt === n);
      expect(act?.kind, n).to.equal('wait');
      expect(recordOf(act?.ops ?? []), n).to.deep.include({ phase: 'Pending', reason: REASONS.building });
    }
    expect(out.builds?.map((r) => [r.tag, r.attempts])).to.deep.equal([
      [buildTag(H1), ['a', 'b']],
      [buildTag(H2), ['c']],
    ]);
    expect(out.builds?.[0]?.limits).to.deep.equal({ diskBytes: 3000, memoryBytes: 100, cpus: 2 });
    expect(out.builds?.[1]?.limits).to.deep.equal({ diskBytes: null, memoryBytes: null, cpus: null });
    expect(renderPlan(out)).to.contain(`Image ${buildTag(H1)} is built first: 2 attempts wait (Building): a, b`);
  });

  it('an image of that hash on the engine is used (no build), never pinned; a tag without the hash label is built again', function () {
    const a = spec('a', { build: build(H1), image: buildTag(H1) });
    const out = plan(input({ specs: [a], snapshot: engineWith({ [H1]: H1 }) }));
    expect(out.actions[0]?.kind).to.equal('provision');
    expect(out.builds).to.equal(undefined);
    const create = out.actions[0]?.ops.find((o) => o.type === 'create-container') as Extract<Operation, { type: 'create-container' }>;
    expect(create.desired.loaded.spec.image).to.equal(buildTag(H1));
    expect(create.image).to.equal(undefined);
    const foreign = plan(input({ specs: [a], snapshot: engineWith({ [H1]: 'not-this-hash' }) }));
    expect(foreign.actions[0]?.kind).to.equal('wait');
    expect(foreign.builds?.map((r) => r.hash)).to.deep.equal([H1]);
  });

  it("the builder's state words the wait: queued, under way, built by another berth", function () {
    const a = spec('a', { build: build(H1), image: buildTag(H1) });
    const msg = (s: ImageBuildState) =>
      recordOf(plan(input({ specs: [a], snapshot: engineWith(), builds: { states: new Map([[H1, s]]), maxBuilds: 2 } })).actions[0]?.ops ?? [])?.message;
    expect(msg({ queued: true })).to.equal(`image ${buildTag(H1)} waits its turn to build (--max-builds 2)`);
    expect(msg({ building: { since: 1, step: '2/3' } })).to.equal(`building image ${buildTag(H1)}`);
    expect(msg({ building: { since: 1, elsewhere: 'berth pid 7 on host h' } })).to.equal(`image ${buildTag(H1)} is being built by berth pid 7 on host h`);
  });

  it('a failed build blocks its attempts (BuildFailed, settled: no requeue) until a rerun after the failure', function () {
    const a = spec('a', { build: build(H1), image: buildTag(H1) });
    const failed = { states: new Map([[H1, { failed: { at: 1_000, message: 'Dockerfile line 2 (RUN exit 3): returned a non-zero code: 3' } }]]), maxBuilds: 1 };
    const out = plan(input({ specs: [a], snapshot: engineWith(), builds: failed }));
    const act = out.actions[0];
    expect(act?.kind).to.equal('block');
    expect(act?.requeueAfterMs).to.equal(undefined);
    expect(recordOf(act?.ops ?? [])).to.deep.include({ phase: 'Blocked', reason: REASONS.buildFailed });
    expect(recordOf(act?.ops ?? [])?.message).to.contain('Dockerfile line 2 (RUN exit 3)');
    expect(out.builds).to.equal(undefined);
    // already recorded so: nothing to write
    const rec = status('a', { phase: 'Blocked', reason: REASONS.buildFailed, message: recordOf(act?.ops ?? [])?.message as string, specHash: 'h-a', run: 1 });
    expect(plan(input({ specs: [a], snapshot: engineWith(), builds: failed, statuses: statuses(rec) })).actions[0]?.ops).to.deep.equal([]);
    // berth rerun after the failure: built again
    const rerun = status('a', { ...rec, rerunRequested: { at: new Date(2_000).toISOString(), run: 1 } });
    const again = plan(input({ specs: [a], snapshot: engineWith(), builds: failed, statuses: statuses(rerun) }));
    expect(again.builds?.map((r) => [r.hash, r.rerunAt])).to.deep.equal([[H1, 2_000]]);
    expect(recordOf(again.actions[0]?.ops ?? [])).to.deep.include({ phase: 'Pending', reason: REASONS.building });
  });

  it("a grader's build gates the run too", function () {
    const a = spec('a', {
      grade: {
        image: buildTag(H2),
        build: build(H2),
        command: ['true'],
        env: {},
        fixture: null,
        fixtureDigest: null,
        protect: [],
        deadlineSeconds: null,
        resources: { cpus: null, memoryBytes: null, pids: 512 },
        network: { mode: 'none' },
        when: 'always',
      },
    });
    const out = plan(input({ specs: [a], snapshot: engineWith() }));
    expect(out.builds?.map((r) => r.hash)).to.deep.equal([H2]);
    expect(recordOf(out.actions[0]?.ops ?? [])?.message).to.equal(`building the grader's image ${buildTag(H2)}`);
  });

  it('FROM images: pulled by berth before the build is asked for (Pending/Pulling, platform passed); a failed pull blocks with its words; Never or no puller: missing', function () {
    const REG = 'reg.example:5000/base:1';
    const b: NormalizedBuild = { ...build(H1), from: [REG, 'berth/busybox:local'], platforms: { [REG]: 'linux/arm64' } };
    const a = spec('a', { build: b, image: buildTag(H1) });
    const pulls = (states: Map<string, ImagePullState> = new Map()) => ({ states, prefetch: 0 });
    const out = plan(input({ specs: [a], snapshot: engineWith(), pulls: pulls() }));
    expect(out.actions[0]?.kind).to.equal('wait');
    expect(recordOf(out.actions[0]?.ops ?? [])).to.deep.include({ phase: 'Pending', reason: REASONS.pulling, message: `pulling image ${REG} of the build` });
    // the engine holds busybox: only the registry's image is pulled, for its platform; no build yet
    expect(out.pulls).to.deep.equal([{ ref: REG, attempts: ['a'], runs: ['a#1'], platform: 'linux/arm64' }]);
    expect(out.builds).to.equal(undefined);
    // a pull that failed: Blocked/ImagePullBackOff with the puller's words, never a build
    const failed: ImagePullState = {
      failed: {
        kind: 'not-found',
        first: `not found: ${REG} is not in reg.example:5000: manifest unknown`,
        latest: `not found: ${REG} is not in reg.example:5000: manifest unknown`,
        failures: 1,
        retryAt: Date.now() + 60_000,
      },
    };
    const blocked = plan(input({ specs: [a], snapshot: engineWith(), pulls: pulls(new Map([[REG, failed]])) }));
    expect(recordOf(blocked.actions[0]?.ops ?? [])).to.deep.include({ phase: 'Blocked', reason: REASONS.imagePullBackOff });
    expect(recordOf(blocked.actions[0]?.ops ?? [])?.message).to.contain(`image ${REG} of the build: pull failed: not found: ${REG} is not in reg.example:5000`);
    expect(blocked.builds).to.equal(undefined);
    // pulled (the engine holds it now): the build is asked for
    const withBase = {
      ...engineWith(),
      images: imageIndex([
        { id: BUSY, tags: ['berth/busybox:local'], labels: {} },
        { id: `sha256:${'9'.repeat(64)}`, tags: [REG], labels: {} },
      ]),
    };
    expect(plan(input({ specs: [a], snapshot: withBase, pulls: pulls() })).builds?.map((r) => r.hash)).to.deep.equal([H1]);
    // built already: its FROM images are not asked for
    expect(plan(input({ specs: [a], snapshot: engineWith({ [H1]: H1 }), pulls: pulls() })).pulls).to.equal(undefined);
    // imagePullPolicy Never: a FROM image the engine lacks is missing
    const never = spec('a', { build: b, image: buildTag(H1), pullPolicies: { main: 'Never', grade: 'Never', sidecars: {} } });
    const n = plan(input({ specs: [never], snapshot: engineWith(), pulls: pulls() }));
    expect(recordOf(n.actions[0]?.ops ?? [])).to.deep.include({ phase: 'Blocked', reason: REASONS.imageMissing });
    expect(recordOf(n.actions[0]?.ops ?? [])?.message).to.contain(`image ${REG} of the build (FROM) is not on the engine (imagePullPolicy is Never`);
  });
});
