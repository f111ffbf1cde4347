/**
 * The grade hash: sha256 (hex) of the canonical JSON of what decides a grade (spec.grade's image,
 * command, env, its fixture's digest, protect, when, resources, network). It is not part of the
 * spec hash: a changed grade hash grades every finished run again (into `grade-<k+1>`), it never
 * runs the attempt again. The fixture's path and the deadline are left out: moving the hidden
 * tests or giving the grader more time judges nothing differently.
 */
import { canonicalJson } from './canonical-json';
import { sha256Hex } from './hash';
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

function hashOf(g: NormalizedGrade): string {
  return sha256Hex(
    canonicalJson({
      version: GRADE_HASH_VERSION,
      image: g.image,
      command: g.command,
      env: g.env,
      fixtureDigest: g.fixtureDigest,
      protect: [...g.protect].sort(),
      when: g.when,
      resources: g.resources,
      network: g.network,
    }),
  );
}
