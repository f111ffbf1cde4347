/**
 * The spec hash: sha256 (hex) of the canonical JSON of `{schema: SPEC_HASH_SCHEMA, spec}`, where
 * `spec` is the whole normalized attempt with the fields that must not replace an attempt
 * blanked (as compose's hash.go). It is stored as the `dev.berth.spec-hash` label; a new hash
 * means the attempt is replaced.
 *
 * Every field of NormalizedAttempt is classified in SPEC_FIELDS, checked at compile time: a
 * field added to the type does not compile until it is classified, and a field the normalized
 * object carries that the table does not know is hashed (it replaces; it is never ignored
 * silently). A field added after the first hash is hashed only where it differs from the default
 * it declares (the compiler asks for one), so every spec written before it keeps its hash and an
 * upgrade replaces no attempt. Ignored on purpose, so changing them never re-runs an attempt:
 * - `labels`: for selection only (`berth get -l`).
 * - `retries`, `ttlSecondsAfterFinished`: policy about runs and clean-up, read afresh on every
 *   reconcile; raising `retries` lets a failed attempt run again without a spec change.
 * - where things live on the host: the fixture path and its layers' paths (their content, in
 *   order, is in `fixtureDigest`) and the
 *   files of `fromFile` secrets.
 * - `workspace`: what of the workspace is brought home after a run (export, exclude, caps).
 *   Changing what is exported must not re-run an expensive agent; it applies from the next run.
 * - `harvest`: what a run's results folder keeps (its caps); as `workspace`, from the next harvest. Secrets count by name and source kind (plus the variable name
 *   for `fromEnv`), never by value.
 * Defaults are already filled in by normalization, so writing a default out changes nothing;
 * lists whose order means nothing (secrets, volumes, egress) are sorted there too (and here
 * again). The hashed form of a field is exactly what it was when the hash was first written
 * (test/unit/spec/hash-compat.test.ts): change one only with a SPEC_HASH_SCHEMA bump.
 */
import { hash as oneShotHash } from 'node:crypto';
import { SPEC_HASH_SCHEMA } from '../constants';
import { canonicalJson } from './canonical-json';
import type { NormalizedAttempt } from './types';

export { canonicalJson } from './canonical-json';

/**
 * The fields of the first hash (SPEC_HASH_SCHEMA 1), hashed whatever their value. No other field
 * may be (hash-compat.test.ts holds this list to the first hash's): a new one added here would
 * re-hash every existing attempt.
 */
type FirstField =
  | 'apiVersion'
  | 'kind'
  | 'name'
  | 'image'
  | 'command'
  | 'workingDir'
  | 'env'
  | 'secretEnv'
  | 'secrets'
  | 'fixtureDigest'
  | 'results'
  | 'network'
  | 'volumes'
  | 'resources'
  | 'deadlineSeconds';

/**
 * How a field counts: ignored, or, for a field of the first hash, hashed as it is ('hash') or in
 * a canonical form; any later field only where it is not its `default` (compared by canonical
 * JSON), the value a spec that does not write it normalizes to.
 */
type FieldRule<K extends keyof NormalizedAttempt> =
  'ignore' | (K extends FirstField ? 'hash' | ((spec: NormalizedAttempt) => unknown) : { default: NormalizedAttempt[K] });
type AnyRule = 'hash' | 'ignore' | ((spec: NormalizedAttempt) => unknown) | { default: unknown };

const byName = <T extends { name: string }>(a: T, b: T): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

type Resources = NormalizedAttempt['resources'];
/** The sub-fields of `resources` in the first hash; the same rule one level down (`resources` is hashed as an object). */
type FirstResource = 'cpus' | 'memoryBytes' | 'pids';
type ResourceRule<K extends keyof Resources> = 'ignore' | (K extends FirstResource ? 'hash' : { default: Resources[K] });

/** How each field of `resources` counts for the hash: every field, exactly once (a new one states its default). */
export const RESOURCE_FIELDS = {
  cpus: 'hash',
  memoryBytes: 'hash',
  pids: 'hash',
  // added after the first hash: a spec without it keeps its hash
  diskBytes: { default: null },
} satisfies { [K in keyof Resources]: ResourceRule<K> };

/** `value`'s fields as `rules` count them: a field at its rule's default is left out, as if absent. */
function counted(rules: Record<string, AnyRule | undefined>, value: object, spec?: NormalizedAttempt): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const rule: AnyRule = (Object.hasOwn(rules, key) ? rules[key] : undefined) ?? 'hash';
    if (rule === 'ignore') continue;
    const v = (value as Record<string, unknown>)[key];
    if (rule === 'hash') out[key] = v;
    else if (typeof rule === 'function') out[key] = spec ? rule(spec) : v;
    else if (canonicalJson(v) !== canonicalJson(rule.default)) out[key] = v;
  }
  return out;
}

/** How each field of the normalized attempt counts for the hash: every field, exactly once. */
export const SPEC_FIELDS = {
  apiVersion: 'hash',
  kind: 'hash',
  name: 'hash',
  labels: 'ignore',
  image: 'hash',
  command: 'hash',
  workingDir: 'hash',
  env: 'hash',
  secretEnv: 'hash',
  // by name and source kind, never the file's path
  secrets: (s) =>
    s.secrets.map((x) => (x.fromEnv !== undefined ? { name: x.name, source: 'env', env: x.fromEnv } : { name: x.name, source: 'file' })).sort(byName),
  fixture: 'ignore',
  fixtureDigest: 'hash',
  // where the layers live on the host; their digests, in order, are in fixtureDigest
  fixtureLayers: 'ignore',
  results: 'hash',
  network: (s) => ({ mode: s.network.mode, egress: [...s.network.egress].sort() }),
  credentials: { default: [] },
  // a volume's size, added after the first hash, only where it is set: a spec without one keeps its hash
  volumes: (s) => [...s.volumes].sort(byName).map(({ sizeBytes, ...v }) => (sizeBytes === null ? v : { ...v, sizeBytes })),
  resources: (s) => counted(RESOURCE_FIELDS, s.resources),
  deadlineSeconds: 'hash',
  retries: 'ignore',
  ttlSecondsAfterFinished: 'ignore',
  sidecars: { default: [] },
  user: { default: null },
  readOnlyRootFilesystem: { default: false },
  // the grade is not the attempt: changing it grades the finished runs again (grade-hash.ts), never re-runs them
  grade: 'ignore',
  workspace: 'ignore',
  harvest: 'ignore',
} satisfies { [K in keyof NormalizedAttempt]: FieldRule<K> };

/** The normalized attempt with the ignored fields blanked and the rest in their hashed form. */
export function hashedSpec(spec: NormalizedAttempt): Record<string, unknown> {
  return counted(SPEC_FIELDS as Record<string, AnyRule | undefined>, spec, spec);
}

/** sha256 hex of the canonical hashed form of `spec`. */
export function specHash(spec: NormalizedAttempt): string {
  return sha256Hex(canonicalJson({ schema: SPEC_HASH_SCHEMA, spec: hashedSpec(spec) }));
}

/** sha256 hex (crypto.hash: one call, no Hash object; a set's thousands of children each hash their spec). */
export function sha256Hex(data: string | Uint8Array): string {
  return oneShotHash('sha256', data, 'hex');
}
