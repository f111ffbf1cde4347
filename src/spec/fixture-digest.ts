/**
 * The fixture digest: sha256 over the fixture's sorted file tree (relative path, type, permission
 * bits, size, content sha256, link target). It is what the spec hash sees of a fixture, so editing
 * a fixture file re-runs the attempt while moving the specs folder does not.
 */
import { canonicalJson } from './canonical-json';
import type { FixtureEntry } from './fixture-scan';
import { sha256Hex } from './hash';

export const FIXTURE_DIGEST_VERSION = 1;

export function fixtureDigest(entries: readonly FixtureEntry[]): string {
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return sha256Hex(canonicalJson({ version: FIXTURE_DIGEST_VERSION, entries: sorted }));
}

/**
 * The digest of a fixture of layers, copied in order: one layer's digest is its own (so
 * `fixture: [x]` hashes as `fixture: x` does, and every spec written before layers keeps its
 * hash); more layers hash their digests in order (swapping two layers is another fixture).
 */
export function layersDigest(digests: readonly string[]): string | null {
  if (digests.length === 0) return null;
  if (digests.length === 1) return digests[0] as string;
  return sha256Hex(canonicalJson({ version: FIXTURE_DIGEST_VERSION, layers: digests }));
}
