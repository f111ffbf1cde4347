/**
 * The spec hash: sha256 (hex) of the canonical JSON of `{schema: SPEC_HASH_SCHEMA, spec}`, where
 * `spec` is the normalized attempt reduced to what determines a run. It is stored as the
 * `dev.berth.spec-hash` label; a new hash means the attempt is replaced.
 *
 * Left out on purpose, so changing them never re-runs an attempt:
 * - `labels`: for selection only (`berth get -l`).
 * - `retries`, `ttlSecondsAfterFinished`: policy about runs and clean-up, read afresh on every
 *   reconcile; raising `retries` lets a failed attempt run again without a spec change.
 * - where things live on the host: the fixture path (its content is in `fixtureDigest`) and the
 *   files of `fromFile` secrets. Secrets count by name and source kind (plus the variable name
 *   for `fromEnv`), never by value.
 * Defaults are already filled in by normalization, so writing a default out changes nothing;
 * lists whose order means nothing (secrets, volumes, egress) are sorted there too.
 */
import { createHash } from 'node:crypto';
import { SPEC_HASH_SCHEMA } from '../constants';
import { canonicalJson } from './canonical-json';
import type { NormalizedAttempt } from './types';

export { canonicalJson } from './canonical-json';

/** The part of a normalized attempt that the hash covers. */
export function hashedSpec(spec: NormalizedAttempt): Record<string, unknown> {
  return {
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
    volumes: [...spec.volumes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    resources: spec.resources,
    deadlineSeconds: spec.deadlineSeconds,
    // only when there are any, so specs without sidecars keep the hashes they always had
    ...(spec.sidecars.length ? { sidecars: spec.sidecars } : {}),
  };
}

/** sha256 hex of the canonical hashed form of `spec`. */
export function specHash(spec: NormalizedAttempt): string {
  return sha256Hex(canonicalJson({ schema: SPEC_HASH_SCHEMA, spec: hashedSpec(spec) }));
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
