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
 * - `harvest`: what a run's results folder keeps (its caps); as `workspace`, from the next harvest.
 * Secrets count by name and source kind (plus the variable name for `fromEnv`), never by value.
 * Defaults are already filled in by normalization, so writing a default out changes nothing;
 * lists whose order means nothing (secrets, volumes, egress) are sorted there too (and here
 * again). The hashed form of a field is exactly what it was when the hash was first written
 * (test/unit/spec/hash-compat.test.ts): change one only with a SPEC_HASH_SCHEMA bump.
 */
import { hash as oneShotHash } from 'node:crypto';
import { SPEC_HASH_SCHEMA } from '../constants';
import { sha256HexJs } from '../util/sha256';
import { canonicalJson } from './canonical-json';
import type { CredentialSpec, NormalizedAttempt, SecretRef, SidecarReady, SidecarSpec, VolumeMount } from './types';

export { canonicalJson } from './canonical-json';

/**
 * How a field counts for a hash, in a table that names every field of its type, nested objects
 * and list items included, so that adding a field anywhere does not compile until it is classified:
 * - `'ignore'`: never counts;
 * - a field the type had when it first counted (`First`): `'hash'`, as it is, or `{ form }`, in the
 *   canonical form `form` gives (a sorted list, a nested table);
 * - any other field: `{ default }`, the value a spec that does not write it normalizes to (absent:
 *   `undefined`), and counts only where it differs from it (in the form `form` gives, if any), so
 *   every spec written before the field existed keeps its hash.
 */
type Rule<T, K extends AllKeys<T>, First> =
  'ignore' | (K extends First ? 'hash' | { form: (v: T) => unknown } : { default: ValueOf<T, K> | undefined; form?: (v: T) => unknown });

/** Every field of T (each member of a union: a sidecar's `ready` is one of three shapes), with its rule. */
export type FieldTable<T, First extends AllKeys<T>> = { [K in AllKeys<T>]: Rule<T, K, First> };

type AllKeys<T> = T extends unknown ? keyof T : never;
type ValueOf<T, K> = T extends unknown ? (K extends keyof T ? T[K] : never) : never;
type AnyRule = 'hash' | 'ignore' | { form: (v: never) => unknown } | { default: unknown; form?: (v: never) => unknown };

/** `value`'s fields as `table` counts them (an unknown field is hashed: it replaces, never ignored silently). */
export function countedFields<T extends object>(table: object, value: T): Record<string, unknown> {
  const rules = table as Record<string, AnyRule | undefined>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const rule: AnyRule = (Object.hasOwn(rules, key) ? rules[key] : undefined) ?? 'hash';
    const v = (value as Record<string, unknown>)[key];
    if (rule === 'ignore' || v === undefined) continue;
    if (rule === 'hash') {
      out[key] = v;
      continue;
    }
    // a default of undefined (absent when not written) is never met here: v is defined
    if ('default' in rule && rule.default !== undefined && canonicalJson(v) === canonicalJson(rule.default)) continue;
    const form = rule.form as ((x: T) => unknown) | undefined;
    out[key] = form ? form(value) : v;
  }
  return out;
}

const byName = <T extends { name: string }>(a: T, b: T): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

type Resources = NormalizedAttempt['resources'];

/** `resources`: cpus, memoryBytes and pids were in the first hash. */
export const RESOURCE_FIELDS = {
  cpus: 'hash',
  memoryBytes: 'hash',
  pids: 'hash',
  // added after the first hash: a spec without it keeps its hash
  diskBytes: { default: null },
} satisfies FieldTable<Resources, 'cpus' | 'memoryBytes' | 'pids'>;

/** `network` (its `credentials` sit beside it, so its hashed form stays the first hash's). */
export const NETWORK_FIELDS = {
  mode: 'hash',
  egress: { form: (n) => [...n.egress].sort() },
} satisfies FieldTable<NormalizedAttempt['network'], 'mode' | 'egress'>;

/** A secret counts by name and source kind (plus the variable for `fromEnv`), never by value or the file's path. */
export const SECRET_FIELDS = {
  name: 'hash',
  fromEnv: 'hash',
  fromFile: 'ignore',
} satisfies FieldTable<SecretRef, 'name' | 'fromEnv' | 'fromFile'>;

/** The first hash's form of a secret ({name, source, env}), with any later field of the table beside it. */
function secretForm(x: SecretRef): { name: string } & Record<string, unknown> {
  const { name: _n, fromEnv: _e, ...later } = countedFields(SECRET_FIELDS, x);
  return { ...later, ...(x.fromEnv !== undefined ? { name: x.name, source: 'env', env: x.fromEnv } : { name: x.name, source: 'file' }) };
}

/** A volume: its size came after the first hash. */
export const VOLUME_FIELDS = {
  name: 'hash',
  mountPath: 'hash',
  readOnly: 'hash',
  sizeBytes: { default: null },
} satisfies FieldTable<VolumeMount, 'name' | 'mountPath' | 'readOnly'>;

/** An injected credential, as it first counted (with `network.credentials`). */
export const CREDENTIAL_FIELDS = {
  host: 'hash',
  port: 'hash',
  secret: 'hash',
  header: 'hash',
  format: 'hash',
  caSecret: 'hash',
} satisfies FieldTable<CredentialSpec, 'host' | 'port' | 'secret' | 'header' | 'format' | 'caSecret'>;

/** A sidecar's readiness, whichever of its shapes. */
export const READY_FIELDS = {
  tcp: 'hash',
  log: 'hash',
  command: 'hash',
  deadlineSeconds: 'hash',
} satisfies FieldTable<SidecarReady, 'tcp' | 'log' | 'command' | 'deadlineSeconds'>;

/** A sidecar, as it first counted; its own egress, credentials and readiness came later, absent when not written. */
export const SIDECAR_FIELDS = {
  name: 'hash',
  image: 'hash',
  command: 'hash',
  env: 'hash',
  secretEnv: 'hash',
  secrets: 'hash',
  egress: { default: undefined },
  credentials: { default: undefined, form: (sc) => sc.credentials?.map((c) => countedFields(CREDENTIAL_FIELDS, c)) },
  ready: { default: undefined, form: (sc) => (sc.ready ? countedFields(READY_FIELDS, sc.ready) : undefined) },
} satisfies FieldTable<SidecarSpec, 'name' | 'image' | 'command' | 'env' | 'secretEnv' | 'secrets'>;

/** The main container's uid:gid. */
export const USER_FIELDS = { uid: 'hash', gid: 'hash' } satisfies FieldTable<NonNullable<NormalizedAttempt['user']>, 'uid' | 'gid'>;

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

/** How each field of the normalized attempt counts for the hash: every field, exactly once, nested tables below. */
export const SPEC_FIELDS = {
  apiVersion: 'hash',
  kind: 'hash',
  name: 'hash',
  labels: 'ignore',
  image: 'hash',
  // when berth pulls: never re-runs an attempt (added after the first hash; not hashed at all)
  pullPolicies: 'ignore',
  // added after the first hash: only the build hash counts (the context's place on the host does not); a spec without build keeps its hash
  build: { default: undefined, form: (s) => s.build?.hash },
  command: 'hash',
  workingDir: 'hash',
  env: 'hash',
  secretEnv: 'hash',
  secrets: { form: (s) => s.secrets.map(secretForm).sort(byName) },
  fixture: 'ignore',
  fixtureDigest: 'hash',
  // where the layers live on the host; their digests, in order, are in fixtureDigest
  fixtureLayers: 'ignore',
  results: 'hash',
  network: { form: (s) => countedFields(NETWORK_FIELDS, s.network) },
  credentials: { default: [], form: (s) => s.credentials.map((c) => countedFields(CREDENTIAL_FIELDS, c)) },
  volumes: { form: (s) => [...s.volumes].sort(byName).map((v) => countedFields(VOLUME_FIELDS, v)) },
  resources: { form: (s) => countedFields(RESOURCE_FIELDS, s.resources) },
  deadlineSeconds: 'hash',
  retries: 'ignore',
  ttlSecondsAfterFinished: 'ignore',
  sidecars: { default: [], form: (s) => s.sidecars.map((sc) => countedFields(SIDECAR_FIELDS, sc)) },
  user: { default: null, form: (s) => (s.user ? countedFields(USER_FIELDS, s.user) : null) },
  readOnlyRootFilesystem: { default: false },
  sandbox: { default: false },
  // the grade is not the attempt: changing it grades the finished runs again (grade-hash.ts), never re-runs them
  grade: 'ignore',
  workspace: 'ignore',
  harvest: 'ignore',
} satisfies FieldTable<NormalizedAttempt, FirstField>;

/** The normalized attempt with the ignored fields blanked and the rest in their hashed form. */
export function hashedSpec(spec: NormalizedAttempt): Record<string, unknown> {
  return countedFields(SPEC_FIELDS, spec);
}

/** sha256 hex of the canonical hashed form of `spec`. */
export function specHash(spec: NormalizedAttempt): string {
  return sha256Hex(canonicalJson({ schema: SPEC_HASH_SCHEMA, spec: hashedSpec(spec) }));
}

/** The fields of an Attempt's spec no spec hash reads, as a set's template writes them (SPEC_FIELDS's ignored ones). */
const UNHASHED: ReadonlySet<string> = new Set(Object.entries(SPEC_FIELDS).flatMap(([k, rule]) => (rule === 'ignore' ? [k] : [])));

/**
 * The key an AttemptSet's pinned images hold under (status/pins.ts): sha256 of its template as
 * written (`${{ }}` unrendered) less what no child's spec hash reads: `workspace`, `harvest`,
 * `grade`, `retries`, `ttlSecondsAfterFinished`, the fixture's path (its content is hashed, not
 * where it lies) and a `fromFile` secret's path. An edit there re-runs no child, so it keeps the
 * pin: one set runs one image. Any other edit of the template starts a new pin.
 */
export function templatePinKey(template: Readonly<Record<string, unknown>>): string {
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(template)) {
    if (UNHASHED.has(k)) continue;
    kept[k] =
      k === 'secrets' && Array.isArray(v) ? v.map((x: unknown) => (typeof x === 'object' && x !== null && 'fromFile' in x ? { ...x, fromFile: true } : x)) : v;
  }
  return sha256Hex(canonicalJson({ pin: 1, template: kept }));
}

/** sha256 hex (crypto.hash: one call, no Hash object; a set's thousands of children each hash their spec). */
export function sha256Hex(data: string | Uint8Array): string {
  // The first few small inputs of a process are hashed in JavaScript (util/sha256.ts: the same
  // digests): a command that hashes nothing else never loads node:crypto (start-up, issue 55).
  // Past JS_HASH_BUDGET bytes node:crypto does it all (loaded by the build on first use).
  if (jsHashed < JS_HASH_BUDGET && data.length <= JS_HASH_MAX) {
    jsHashed += data.length + 64;
    return sha256HexJs(data);
  }
  jsHashed = JS_HASH_BUDGET;
  return oneShotHash('sha256', data, 'hex');
}

/** Bytes (and 64 a call) hashed in JavaScript before node:crypto takes over; a longer input goes to it at once. */
const JS_HASH_BUDGET = 8192;
const JS_HASH_MAX = 1024;
let jsHashed = 0;
