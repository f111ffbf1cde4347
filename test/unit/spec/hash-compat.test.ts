/**
 * The spec hash must never change for a spec that did not change: a new hash replaces the
 * attempt, so a changed hash function would replace every running attempt of every user on
 * upgrade. Pinned here: the hash of every example spec and test fixture, and equality with the
 * hash as first written (an allow-list, kept below verbatim as the reference) over random specs.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { SPEC_HASH_SCHEMA } from '../../../src/constants';
import { canonicalJson } from '../../../src/spec/canonical-json';
import { RESOURCE_FIELDS, SPEC_FIELDS, specHash } from '../../../src/spec/hash';
import { loadSpecs } from '../../../src/spec/loader';
import type { NormalizedAttempt } from '../../../src/spec/types';
import { REPO, cleanupTemp, doc, loadOne, tempDir } from './helpers';

/** The hash as berth 0.1 computed it (src/spec/hash.ts before the whole-spec form), verbatim. */
function referenceHash(spec: NormalizedAttempt): string {
  const hashed = {
    apiVersion: spec.apiVersion,
    kind: spec.kind,
    name: spec.name,
    image: spec.image,
    command: spec.command,
    workingDir: spec.workingDir,
    env: spec.env,
    secretEnv: spec.secretEnv,
    secrets: spec.secrets
      .map((s) => (s.fromEnv !== undefined ? { name: s.name, source: 'env', env: s.fromEnv } : { name: s.name, source: 'file' }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    fixtureDigest: spec.fixtureDigest,
    results: spec.results,
    network: { mode: spec.network.mode, egress: [...spec.network.egress].sort() },
    // the first hash's volume fields (a later one, such as sizeBytes, only where it is written: not in this reference)
    volumes: [...spec.volumes]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((v) => ({ name: v.name, mountPath: v.mountPath, readOnly: v.readOnly })),
    // the sub-fields of the first hash (a later one, such as diskBytes, only where it is written: not in this reference)
    resources: { cpus: spec.resources.cpus, memoryBytes: spec.resources.memoryBytes, pids: spec.resources.pids },
    deadlineSeconds: spec.deadlineSeconds,
    ...(spec.sidecars.length ? { sidecars: spec.sidecars } : {}),
  };
  return createHash('sha256')
    .update(canonicalJson({ schema: 1, spec: hashed }))
    .digest('hex');
}

/** Every example spec and good fixture, with the hash it has had since it was written. */
const PINNED: Record<string, string> = {
  'specs/egress/allowlist.yaml#egress-allowlist': '730e163a2fb3e7f5d1c584c1004bc3b088920b6f7e42172e5d10b20aa6344b56',
  'specs/fixture-copy.yaml#fixture-copy': '2f684992f7b7c349a22025e6bda18eb268510d5239a58579623c2cdaada62b6d',
  'specs/hello.yaml#hello': '0c3d71df02f86001c9fa9873f7fadcfff95b0e2ec2e784f0ba6e149ef262cc4d',
  'specs/secret-file.yaml#secret-file': '3acacea9a48aeb1384e6393f4e56eb11f6ac5870f2a2abf9447052fc1808e93f',
  // AttemptSet children: the hash of each rendered Attempt
  'specs/sets/eval-demo.yaml#eval-demo-m1-add': '3aa610acf0f5753dcacee7967b83294c1cc42004b135832013969ff7a19414b6',
  'specs/sets/eval-demo.yaml#eval-demo-m1-count': '6659ac1c5a66874571879ae60773454d07798d5aa693664d009e5c1c7424af01',
  'specs/sets/eval-demo.yaml#eval-demo-m2-add': '9634be966139112cacfd4964786ff665adbff5d80bb36d6b22fa9242585639ad',
  'specs/sets/eval-demo.yaml#eval-demo-m2-count': '96fdc3bdd5c3d09d96a415bc46072aff6010aa741fa9863512382a78496b2a47',
  'specs/suite/demo.yaml#demo-sum': '9778d520cd9ff7a992cb4ab28ad23b957a795328e988e36f2782a90e3727163f',
  'specs/suite/demo.yaml#demo-isolated': 'a2a59f721a40bb06066b027e672bd43b5f947313833362e48d6d9e05c4d07201',
  'specs/suite/demo.yaml#demo-volume': 'bf748dc28790997fa9456234e2c2124f2b42fc3c6ac1d4473bd52f5df5183f76',
  'examples/lifecycle/attempts.yaml#lc-success': '588de53d56d06bd4ec1ca979bbfbb9771c20d12bd2648f2a7ec503ce3569b84a',
  'examples/lifecycle/attempts.yaml#lc-failure': 'c4068166636d4c689308b3a6492a11b9c8b744c8f294429e48ba9215b0d29af5',
  'examples/lifecycle/attempts.yaml#lc-timeout': '512497a67053a2da04d2b15597b21ad73ae03615ae7de038522dbfcc7e046f92',
  'examples/lifecycle/attempts.yaml#lc-fixture': '3d561049d60c8d56a7c1077109a79ba1e9402b52010afbc1bd5096b32ab59e71',
  'examples/lifecycle/attempts.yaml#lc-secret': 'ad54bfe7835de4612edb58d6e12340a1530f2fc2c03021323ad510c34f8d7196',
  'test/fixtures/good/full.yaml#good-full': '74350f569f44461ccd3a04570381e381e756ced5bd18f6891f30781be58c4c2b',
  'test/fixtures/good/minimal.yaml#good-minimal': '95a97de179091a3321b4733219b45770ccd6878ad931015b8175f34638b92795',
  'test/fixtures/good/multi.yaml#good-multi-a': 'ef64f8c7fbca5619a83ab5723a42d6fa72d126a66f3260f55ff6450a091fb0dd',
  'test/fixtures/good/multi.yaml#good-multi-b': '2cf332dbe6ef4b27fc837c9ec87dfaf9cf650e6052ada290d16731c8f759da12',
};

const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);
const text = fc.string({ maxLength: 12 });
const dict = fc.dictionary(name, text, { maxKeys: 3 });
const sidecar = fc.record({
  name,
  image: text,
  command: fc.option(fc.array(text, { maxLength: 3 }), { nil: null }),
  env: dict,
  secretEnv: dict,
  secrets: fc.array(name, { maxLength: 2 }),
});
const attempt: fc.Arbitrary<NormalizedAttempt> = fc.record({
  apiVersion: fc.constantFrom('berth.dev/v1', 'berth.dev/v2'),
  kind: fc.constant('Attempt'),
  name,
  labels: dict,
  image: text,
  // ignored for the hash: any value
  pullPolicies: fc.record({
    main: fc.constantFrom('IfNotPresent' as const, 'Always' as const, 'Never' as const),
    grade: fc.constantFrom('IfNotPresent' as const, 'Always' as const, 'Never' as const),
    sidecars: fc.dictionary(name, fc.constantFrom('IfNotPresent' as const, 'Always' as const, 'Never' as const), { maxKeys: 2 }),
  }),
  command: fc.option(fc.array(text, { maxLength: 3 }), { nil: null }),
  workingDir: text,
  env: dict,
  secretEnv: dict,
  secrets: fc.array(fc.oneof(fc.record({ name, fromEnv: name }), fc.record({ name, fromFile: text })), { maxLength: 3 }),
  fixture: fc.option(text, { nil: null }),
  fixtureDigest: fc.option(fc.stringMatching(/^[0-9a-f]{8}$/), { nil: null }),
  // ignored for the hash (the digests, in order, are in fixtureDigest): any value
  fixtureLayers: fc.array(fc.record({ path: text, digest: fc.stringMatching(/^[0-9a-f]{8}$/) }), { maxLength: 2 }),
  results: text,
  network: fc.record({
    mode: fc.constantFrom('none', 'isolated', 'bridge') as fc.Arbitrary<NormalizedAttempt['network']['mode']>,
    egress: fc.array(text, { maxLength: 3 }),
  }),
  // specs written before volumes[].size existed: no size
  volumes: fc.array(fc.record({ name, mountPath: text, readOnly: fc.boolean(), sizeBytes: fc.constant(null) }), { maxLength: 3 }),
  resources: fc.record({
    cpus: fc.option(fc.double({ min: 0.1, max: 8, noNaN: true }), { nil: null }),
    memoryBytes: fc.option(fc.nat(), { nil: null }),
    pids: fc.nat(),
    // specs written before resources.disk existed: the sub-field at its default
    diskBytes: fc.constant(null),
  }),
  deadlineSeconds: fc.option(fc.nat(), { nil: null }),
  retries: fc.nat(10),
  ttlSecondsAfterFinished: fc.option(fc.nat(), { nil: null }),
  // at their defaults, as every spec written before they existed
  user: fc.constant(null),
  credentials: fc.constant([]),
  readOnlyRootFilesystem: fc.constant(false),
  sandbox: fc.constant(false),
  grade: fc.constant(null),
  sidecars: fc.array(sidecar, { maxLength: 2 }),
  // ignored for the hash: any value
  workspace: fc.record({
    export: fc.constantFrom('changes', 'none') as fc.Arbitrary<NormalizedAttempt['workspace']['export']>,
    exclude: fc.array(text, { maxLength: 3 }),
    maxBytes: fc.nat(),
    maxFiles: fc.nat(),
    gitignore: fc.boolean(),
  }),
  harvest: fc.record({ maxBytes: fc.nat(), maxFiles: fc.nat() }),
});

describe('spec hash stays what it was', () => {
  afterEach(cleanupTemp);

  it('SPEC_HASH_SCHEMA is still 1 (a bump replaces every attempt of every user)', () => {
    expect(SPEC_HASH_SCHEMA).to.equal(1);
  });

  it('every example spec and good fixture keeps its hash', async () => {
    const got: Record<string, string> = {};
    for (const dir of ['specs', 'examples/lifecycle', 'test/fixtures/good']) {
      const r = await loadSpecs({ specsDir: path.join(REPO, dir), resultsRoot: tempDir() });
      expect(r.errors, dir).to.deep.equal([]);
      for (const s of r.specs) {
        got[`${dir}/${s.relFile}#${s.spec.name}`] = s.hash;
        expect(specHash(s.spec), s.spec.name).to.equal(referenceHash(s.spec));
      }
    }
    expect(got).to.deep.equal(PINNED);
  });

  it('equals the reference hash on random normalized specs', () => {
    fc.assert(
      fc.property(attempt, (s) => {
        expect(specHash(s)).to.equal(referenceHash(s));
      }),
      { numRuns: 500 },
    );
  });

  it("a volume's size counts for the hash only when set", async () => {
    const vol = '  volumes: [{name: data, mountPath: /data}]\n';
    const before = await loadOne(doc('minimal', vol));
    const sized = await loadOne(doc('minimal', '  volumes: [{name: data, mountPath: /data, size: 64Mi}]\n'));
    expect(sized.errors).to.deep.equal([]);
    expect(sized.specs[0]?.spec.volumes).to.deep.equal([{ name: 'data', mountPath: '/data', readOnly: false, sizeBytes: 64 * 1024 ** 2 }]);
    expect(before.specs[0]?.hash).to.equal(referenceHash(before.specs[0]!.spec));
    expect(sized.specs[0]?.hash).to.not.equal(before.specs[0]?.hash);
    const bad = await loadOne(doc('minimal', '  volumes: [{name: data, mountPath: /data, size: 12x}]\n'));
    expect(JSON.stringify(bad.errors))
      .to.match(/volumes.*0.*size/)
      .and.to.include('must be a quantity such as 1Gi, 1G or 500M');
  });

  it('spec.user, spec.readOnlyRootFilesystem and spec.sandbox count for the hash only when set', () => {
    fc.assert(
      fc.property(attempt, fc.nat(65535), fc.nat(65535), (s, uid, gid) => {
        expect(specHash({ ...s, user: { uid, gid } })).to.not.equal(specHash(s));
        expect(specHash({ ...s, user: { uid, gid } })).to.not.equal(specHash({ ...s, user: { uid: uid + 1, gid } }));
        expect(specHash({ ...s, readOnlyRootFilesystem: true })).to.not.equal(specHash(s));
        expect(specHash({ ...s, sandbox: true })).to.not.equal(specHash(s));
        expect(specHash({ ...s, sandbox: false })).to.equal(specHash(s));
      }),
      { numRuns: 100 },
    );
  });

  it('spec.workspace never counts: changing what is exported does not re-run an attempt', async () => {
    const before = await loadOne(doc('minimal'));
    const after = await loadOne(doc('minimal', "  workspace: {export: none, exclude: [dist, '*.log'], maxBytes: 1Gi, maxFiles: 10}\n"));
    expect(after.errors).to.deep.equal([]);
    expect(after.specs[0]?.spec.workspace).to.deep.equal({ export: 'none', exclude: ['dist', '*.log'], maxBytes: 1024 ** 3, maxFiles: 10, gitignore: true });
    expect(before.specs[0]?.spec.workspace).to.deep.equal({ export: 'changes', exclude: [], maxBytes: 256 * 1024 ** 2, maxFiles: 100_000, gitignore: true });
    expect(after.specs[0]?.hash).to.equal(before.specs[0]?.hash);
  });

  it('spec.harvest never counts: changing what a results folder keeps does not re-run an attempt', async () => {
    const before = await loadOne(doc('minimal'));
    const after = await loadOne(doc('minimal', '  harvest: {maxBytes: 100Mi, maxFiles: 10}\n'));
    expect(after.errors).to.deep.equal([]);
    expect(after.specs[0]?.spec.harvest).to.deep.equal({ maxBytes: 100 * 1024 ** 2, maxFiles: 10 });
    expect(before.specs[0]?.spec.harvest).to.deep.equal({ maxBytes: 1024 ** 3, maxFiles: 100_000 });
    expect(after.specs[0]?.hash).to.equal(before.specs[0]?.hash);
    const bad = await loadOne(doc('minimal', '  harvest: {maxBytes: lots}\n'));
    expect(bad.errors.map((e) => e.path)).to.deep.equal(['spec.harvest.maxBytes']);
  });

  it('a field the table does not know is hashed (it replaces), never ignored silently', () => {
    fc.assert(
      fc.property(attempt, (s) => {
        expect(specHash({ ...s, unknownField: 1 } as NormalizedAttempt)).to.not.equal(specHash(s));
        expect(specHash({ ...s, labels: { x: 'y' }, retries: s.retries + 1, ttlSecondsAfterFinished: 5, fixture: '/elsewhere' })).to.equal(specHash(s));
      }),
      { numRuns: 100 },
    );
  });
});

describe("a field added after the first hash cannot change an existing spec's hash", () => {
  afterEach(cleanupTemp);
  /** The fields referenceHash hashes: the only ones hashed whatever their value. */
  const FIRST = [
    'apiVersion',
    'command',
    'deadlineSeconds',
    'env',
    'fixtureDigest',
    'image',
    'kind',
    'name',
    'network',
    'resources',
    'results',
    'secretEnv',
    'secrets',
    'volumes',
    'workingDir',
  ];
  const rules = Object.entries(SPEC_FIELDS) as [keyof NormalizedAttempt, unknown][];
  const later = rules.filter((e): e is [keyof NormalizedAttempt, { default: unknown }] => typeof e[1] === 'object' && e[1] !== null && 'default' in e[1]);

  it('only the fields of the first hash are hashed at every value; every other is ignored or declares its default', () => {
    const always = rules.filter(([, r]) => r === 'hash' || (typeof r === 'object' && r !== null && !('default' in r))).map(([k]) => k);
    expect([...always].sort()).to.deep.equal(FIRST);
    for (const [k, r] of rules) expect(FIRST.includes(k) || r === 'ignore' || later.some(([l]) => l === k), k).to.equal(true);
    expect(later.map(([k]) => k)).to.include.members(['sidecars', 'user', 'readOnlyRootFilesystem', 'sandbox', 'credentials']);
  });

  it('a spec that does not write a later field loads with it at its declared default', async () => {
    const r = await loadOne(doc('minimal'));
    expect(r.errors).to.deep.equal([]);
    const spec = r.specs[0]?.spec as unknown as Record<string, unknown>;
    for (const [k, rule] of later) {
      if (rule.default === undefined) expect(spec[k], k).to.equal(undefined);
      else expect(canonicalJson(spec[k]), k).to.equal(canonicalJson(rule.default));
    }
  });

  it('a later field at its default adds nothing: the hash is the one the spec had before the field existed', () => {
    fc.assert(
      fc.property(attempt, (s) => {
        const atDefaults = { ...s } as Record<string, unknown>;
        for (const [k, r] of later) atDefaults[k] = structuredClone(r.default);
        const absent = { ...atDefaults };
        for (const [k] of later) delete absent[k];
        expect(specHash(atDefaults as unknown as NormalizedAttempt)).to.equal(referenceHash(atDefaults as unknown as NormalizedAttempt));
        expect(specHash(atDefaults as unknown as NormalizedAttempt)).to.equal(specHash(absent as unknown as NormalizedAttempt));
        // one at a time too: each later field at its default hashes as if absent, whatever the others hold
        for (const [k, r] of later) {
          const one = { ...s, [k]: structuredClone(r.default) } as Record<string, unknown>;
          const without = { ...one };
          delete without[k];
          expect(specHash(one as unknown as NormalizedAttempt), k).to.equal(specHash(without as unknown as NormalizedAttempt));
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe("resources: a sub-field added after the first hash cannot change an existing spec's hash either", () => {
  afterEach(cleanupTemp);
  const rules = Object.entries(RESOURCE_FIELDS) as [string, unknown][];
  const later = rules.filter((e): e is [string, { default: unknown }] => typeof e[1] === 'object' && e[1] !== null && 'default' in e[1]);

  it('only cpus, memoryBytes and pids are hashed at every value; every other sub-field is ignored or declares its default', () => {
    expect(
      rules
        .filter(([, r]) => r === 'hash')
        .map(([k]) => k)
        .sort(),
    ).to.deep.equal(['cpus', 'memoryBytes', 'pids']);
    for (const [k, r] of rules) expect(r === 'hash' || r === 'ignore' || later.some(([l]) => l === k), k).to.equal(true);
  });

  it('a spec that does not write a later sub-field loads with it at its default, and hashes as if it were absent', async () => {
    const r = await loadOne(doc('minimal'));
    expect(r.errors).to.deep.equal([]);
    const spec = r.specs[0]?.spec as NormalizedAttempt;
    const res = spec.resources as unknown as Record<string, unknown>;
    for (const [k, rule] of later) expect(canonicalJson(res[k]), k).to.equal(canonicalJson(rule.default));
    const first = { cpus: spec.resources.cpus, memoryBytes: spec.resources.memoryBytes, pids: spec.resources.pids };
    expect(specHash(spec)).to.equal(specHash({ ...spec, resources: first as NormalizedAttempt['resources'] }));
  });

  it('resources.disk, once written, is hashed: changing it replaces the attempt', () => {
    fc.assert(
      fc.property(attempt, fc.integer({ min: 1024 * 1024, max: 2 ** 40 }), (s, disk) => {
        const limited = { ...s, resources: { ...s.resources, diskBytes: disk } };
        expect(specHash(limited)).to.not.equal(specHash(s));
        expect(specHash({ ...s, resources: { ...s.resources, diskBytes: disk + 1 } })).to.not.equal(specHash(limited));
      }),
      { numRuns: 50 },
    );
  });

  it('a sub-field the table does not know is hashed (it replaces), never ignored silently', () => {
    fc.assert(
      fc.property(attempt, (s) => {
        const more = { ...s, resources: { ...s.resources, unknownLimit: 1 } } as unknown as NormalizedAttempt;
        expect(specHash(more)).to.not.equal(specHash(s));
      }),
      { numRuns: 50 },
    );
  });
});
