/**
 * The grade hash: sha256 (hex) of the canonical JSON of what decides a grade (spec.grade's image,
 * command, env, its fixture's digest, protect, when, resources, network). It is not part of the
 * spec hash: a changed grade hash grades every finished run again (into `grade-<k+1>`), it never
 * runs the attempt again. The fixture's path and the deadline are left out: moving the hidden
 * tests or giving the grader more time judges nothing differently.
 */
import { canonicalJson } from './canonical-json';
import { countedFields, sha256Hex, type FieldTable } from './hash';
import type { NormalizedGrade } from './types';

export const GRADE_HASH_VERSION = 1;

/** Computed once per normalized grade: the planner, set admission, `wait` and `summary` ask at every pass for every finished attempt. */
const known = new WeakMap<NormalizedGrade, string>();

export function gradeHash(g: NormalizedGrade): string {
  let h = known.get(g);
  if (h === undefined) {
    h = hashOf(g);
    known.set(g, h);
  }
  return h;
}

/** How each field of spec.grade counts for the grade hash (spec/hash.ts FieldTable: a new field must be classified). */
export const GRADE_FIELDS = {
  image: 'hash',
  // added after the first grade hash: only the build hash counts; a grade without build keeps its hash
  build: { default: undefined, form: (g) => g.build?.hash },
  command: 'hash',
  env: 'hash',
  // where the hidden tests live on the host: their content is in fixtureDigest
  fixture: 'ignore',
  fixtureDigest: 'hash',
  protect: { form: (g) => [...g.protect].sort() },
  // more time judges nothing differently
  deadlineSeconds: 'ignore',
  resources: { form: (g) => countedFields(GRADE_RESOURCE_FIELDS, g.resources) },
  network: { form: (g) => countedFields(GRADE_NETWORK_FIELDS, g.network) },
  when: 'hash',
} satisfies FieldTable<
  NormalizedGrade,
  'image' | 'command' | 'env' | 'fixture' | 'fixtureDigest' | 'protect' | 'deadlineSeconds' | 'resources' | 'network' | 'when'
>;

const GRADE_RESOURCE_FIELDS = { cpus: 'hash', memoryBytes: 'hash', pids: 'hash' } satisfies FieldTable<
  NormalizedGrade['resources'],
  'cpus' | 'memoryBytes' | 'pids'
>;
const GRADE_NETWORK_FIELDS = { mode: 'hash' } satisfies FieldTable<NormalizedGrade['network'], 'mode'>;

function hashOf(g: NormalizedGrade): string {
  return sha256Hex(canonicalJson({ version: GRADE_HASH_VERSION, ...countedFields(GRADE_FIELDS, g) }));
}
