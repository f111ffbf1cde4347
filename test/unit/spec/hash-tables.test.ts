/**
 * The hash tables reach every nested field (spec/hash.ts FieldTable): a field added anywhere must
 * be classified, a later one states its default, and at that default it hashes as if absent. The
 * grade hash, now table-driven too, is still the hash it was (a changed grade hash would grade
 * every finished run again on upgrade).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../../src/spec/canonical-json';
import { GRADE_FIELDS, GRADE_HASH_VERSION, gradeHash } from '../../../src/spec/grade-hash';
import {
  CREDENTIAL_FIELDS,
  NETWORK_FIELDS,
  READY_FIELDS,
  RESOURCE_FIELDS,
  SECRET_FIELDS,
  SIDECAR_FIELDS,
  USER_FIELDS,
  VOLUME_FIELDS,
  specHash,
} from '../../../src/spec/hash';
import type { NormalizedAttempt, NormalizedGrade, SidecarSpec } from '../../../src/spec/types';
import { spec } from '../../support/builders';

/** The grade hash as first written (src/spec/grade-hash.ts before its table), verbatim. */
function referenceGradeHash(g: NormalizedGrade): string {
  const text = canonicalJson({
    version: GRADE_HASH_VERSION,
    image: g.image,
    command: g.command,
    env: g.env,
    fixtureDigest: g.fixtureDigest,
    protect: [...g.protect].sort(),
    when: g.when,
    resources: g.resources,
    network: g.network,
  });
  return createHash('sha256').update(text).digest('hex');
}

const text = fc.string({ maxLength: 10 });
const grade: fc.Arbitrary<NormalizedGrade> = fc.record({
  image: fc.option(text, { nil: null }),
  command: fc.array(text, { maxLength: 3 }),
  env: fc.dictionary(fc.stringMatching(/^[A-Z]{1,5}$/), text, { maxKeys: 3 }),
  fixture: fc.option(text, { nil: null }),
  fixtureDigest: fc.option(fc.stringMatching(/^[0-9a-f]{8}$/), { nil: null }),
  protect: fc.array(text, { maxLength: 3 }),
  deadlineSeconds: fc.option(fc.integer({ min: 1, max: 9999 }), { nil: null }),
  resources: fc.record({
    cpus: fc.option(fc.double({ min: 0.1, max: 8, noNaN: true }), { nil: null }),
    memoryBytes: fc.option(fc.nat(), { nil: null }),
    pids: fc.nat(),
  }),
  network: fc.constant({ mode: 'none' as const }),
  when: fc.constantFrom('always' as const, 'succeeded' as const),
});

describe('hash tables: every nested field classified', () => {
  const tables = { RESOURCE_FIELDS, NETWORK_FIELDS, SECRET_FIELDS, VOLUME_FIELDS, CREDENTIAL_FIELDS, READY_FIELDS, SIDECAR_FIELDS, USER_FIELDS, GRADE_FIELDS };

  it('each rule is hash, ignore, a form, or a default (with an optional form)', () => {
    for (const [t, table] of Object.entries(tables))
      for (const [k, r] of Object.entries(table as Record<string, unknown>)) {
        const ok = r === 'hash' || r === 'ignore' || (typeof r === 'object' && r !== null && ('form' in r || 'default' in r));
        expect(ok, `${t}.${k}`).to.equal(true);
      }
  });

  it("a sidecar's later fields (egress, credentials, ready) at their default hash as if absent; written, they count", () => {
    const sc: SidecarSpec = { name: 'db', image: 'img', command: null, env: {}, secretEnv: {}, secrets: [] };
    const base = spec('a', { network: { mode: 'isolated', egress: [] }, sidecars: [sc] }).spec;
    const withDefaults: NormalizedAttempt = { ...base, sidecars: [{ ...sc, egress: undefined, credentials: undefined, ready: undefined } as SidecarSpec] };
    expect(specHash(withDefaults)).to.equal(specHash(base));
    const ready: NormalizedAttempt = { ...base, sidecars: [{ ...sc, ready: { tcp: 5432, deadlineSeconds: 30 } }] };
    expect(specHash(ready)).to.not.equal(specHash(base));
    const later: NormalizedAttempt = { ...base, sidecars: [{ ...sc, ready: { tcp: 5432, deadlineSeconds: 31 } }] };
    expect(specHash(later)).to.not.equal(specHash(ready));
  });

  it('a volume without a size, and a spec without credentials or user, hash as before those fields existed', () => {
    const base = spec('a', { volumes: [{ name: 'v', mountPath: '/v', readOnly: false, sizeBytes: null }] }).spec;
    const sized = { ...base, volumes: [{ name: 'v', mountPath: '/v', readOnly: false, sizeBytes: 1024 }] };
    expect(specHash(sized)).to.not.equal(specHash(base));
    expect(specHash({ ...base, credentials: [], user: null })).to.equal(specHash(base));
  });

  it('the grade hash is what it was, for any grade', () => {
    fc.assert(
      fc.property(grade, (g) => {
        expect(gradeHash(g)).to.equal(referenceGradeHash(g));
      }),
      { numRuns: 300 },
    );
  });

  it('what does not decide a grade (where the hidden tests live, the deadline) does not change it', () => {
    fc.assert(
      fc.property(grade, text, fc.integer({ min: 1, max: 99 }), (g, place, more) => {
        expect(gradeHash({ ...g, fixture: place, deadlineSeconds: more })).to.equal(gradeHash(g));
      }),
      { numRuns: 100 },
    );
  });
});
