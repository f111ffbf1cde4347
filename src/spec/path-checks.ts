/**
 * Where a spec's paths lead on the host, and whether they may: `fixture` and `fromFile` resolve
 * against the spec file's folder and must stay inside the specs folder after resolving links;
 * `results` resolves against the results root, must stay inside it with no link on the way below
 * it, and must neither lie inside the specs folder nor contain it (so nothing an attempt writes
 * can become a spec).
 */
import { lstatSync, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import type { Dockerfile } from './dockerfile';
import { fixtureDigest } from './fixture-digest';
import { knownFixtureDigest, scanFixture, type FixtureProblem } from './fixture-scan';
import { isInside, isWithin, realpathLooseSync, toPosix, type RealCache } from './path-util';
import { ioReason } from './read-spec-file';

/** The two roots every path check is made against (absolute; `*Real` with links resolved). */
export interface Roots {
  specsRoot: string;
  specsReal: string;
  resultsRoot: string;
  resultsReal: string;
  /** realpath results of this load (folders shared by many specs are resolved once). */
  realCache?: RealCache;
  /** Fixture scans of this load, by real path: a fixture shared by many specs (a fleet's) is walked and digested once per load. */
  fixtureScans?: Map<string, Promise<FixtureWalk>>;
  /** Fixture checks of this load, by the spec's folder and the fixture as written: a fleet's specs resolve their shared `./fixture` once per load. */
  fixtureChecks?: Map<string, Promise<Checked<{ path: string; digest: string }>>>;
  /** Build contexts read by this load (build-context.ts), by the spec's folder, context and Dockerfile as written: a set's children read theirs once. */
  buildChecks?: Map<string, Promise<Checked<{ real: string; dockerfile: string; file: Dockerfile; digest: string }>>>;
  /** The specs come from git (`--git`): a `fromFile` secret is an error (secrets do not live in repositories). */
  fromGit?: boolean;
  /**
   * Names of AttemptSet children the instance has records under in the old form (`<set>--<16
   * hex>`, set-expand.ts legacyChildName): a child of that name keeps it. A file's kept outcome
   * holds only for the same names (file-cache.ts keyOf).
   */
  keptNames?: ReadonlySet<string>;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: FixtureProblem[] };

const fail = (code: FixtureProblem['code'], message: string): { ok: false; problems: FixtureProblem[] } => ({
  ok: false,
  problems: [{ code, message }],
});

/** A fixture walked: what is wrong with it, else its digest. */
export interface FixtureWalk {
  problems: FixtureProblem[];
  digest?: string;
}

async function digestOf(real: string): Promise<FixtureWalk> {
  // An unchanged tree (every entry's identity as when it was last scanned whole): a stat walk.
  const known = await knownFixtureDigest(real);
  if (known !== undefined) return { problems: [], digest: known };
  const scan = await scanFixture(real, fixtureDigest);
  return scan.digest === undefined ? { problems: scan.problems } : { problems: [], digest: scan.digest };
}

/** The fixture at `real` walked and digested, once per load when the load keeps its scans. */
function scanOnce(real: string, roots: Roots): Promise<FixtureWalk> {
  const memo = roots.fixtureScans;
  if (!memo) return digestOf(real);
  let p = memo.get(real);
  if (!p) memo.set(real, (p = digestOf(real)));
  return p;
}

/** Resolves `fixture` and scans it: its real path and digest (once per load when the load keeps its checks). */
export function checkFixture(specDir: string, fixture: string, roots: Roots): Promise<Checked<{ path: string; digest: string }>> {
  const memo = roots.fixtureChecks;
  if (!memo) return resolveAndScan(specDir, fixture, roots);
  const key = `${specDir}\0${fixture}`;
  let p = memo.get(key);
  if (!p) memo.set(key, (p = resolveAndScan(specDir, fixture, roots)));
  return p;
}

async function resolveAndScan(specDir: string, fixture: string, roots: Roots): Promise<Checked<{ path: string; digest: string }>> {
  const found = await resolveInsideSpecs(specDir, fixture, roots, 'fixture');
  if (!found.ok) return found;
  try {
    const scan = await scanOnce(found.value, roots);
    if (scan.digest === undefined) return { ok: false, problems: scan.problems };
    return { ok: true, value: { path: found.value, digest: scan.digest } };
  } catch (err) {
    return fail('io', `cannot read fixture ${JSON.stringify(fixture)}: ${ioReason(err)}`);
  }
}

/** Resolves a `fromFile` secret source: the real path of a regular file inside the specs folder. */
export async function checkSecretFile(specDir: string, fromFile: string, roots: Roots): Promise<Checked<string>> {
  if (roots.fromGit)
    return fail(
      'git-secret',
      `secret file ${JSON.stringify(fromFile)}: specs from git may not read secrets from files (secrets do not live in repositories); use fromEnv`,
    );
  const found = await resolveInsideSpecs(specDir, fromFile, roots, 'secret file');
  if (!found.ok) return found;
  const st = statSync(found.value, { throwIfNoEntry: false });
  if (!st?.isFile()) return fail('missing-file', `secret file ${JSON.stringify(fromFile)} is not a regular file`);
  return found;
}

/** Checks `results` (relative to the results root); returns it normalized, with forward slashes. */
export async function checkResults(results: string, roots: Roots): Promise<Checked<string>> {
  return checkResultsSync(results, roots);
}

/** One path segment that path.resolve leaves as it is (an attempt's name, the default). */
const ONE_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

const resolvedRoots = new Map<string, boolean>();
/** `root` is absolute, in the form path.resolve gives, and not `/` (remembered: the same two roots are asked about for every spec). */
function resolvedRoot(root: string): boolean {
  let r = resolvedRoots.get(root);
  if (r === undefined) {
    if (resolvedRoots.size >= 64) resolvedRoots.clear();
    resolvedRoots.set(root, (r = path.sep === '/' && root.length > 1 && path.resolve(root) === root));
  }
  return r;
}

/** checkResults, synchronously (its link checks use synchronous calls anyway). */
export function checkResultsSync(results: string, roots: Roots): Checked<string> {
  // The common case (the default: the attempt's name) without path.resolve and path.relative.
  const simple = ONE_SEGMENT.test(results) && resolvedRoot(roots.resultsRoot);
  if (simple && resolvedRoot(roots.resultsReal) && roots.realCache?.noLinkIn(roots.resultsRoot, results)) {
    // No link at the name (the results root listed once): its real path is the root's joined
    // with it, inside the root, and no link on the way below the root.
    return specsApartNormal(`${roots.resultsReal}/${results}`, roots) ?? { ok: true, value: results };
  }
  const abs = simple ? `${roots.resultsRoot}/${results}` : path.resolve(roots.resultsRoot, results);
  if (!isInside(roots.resultsRoot, abs)) {
    return fail('path-escape', `results ${JSON.stringify(results)} must stay inside the results root ${roots.resultsRoot}`);
  }
  const real = realpathLooseSync(abs, roots.realCache);
  if (!isInside(roots.resultsReal, real)) {
    return fail('path-escape', `results ${JSON.stringify(results)} leaves the results root through a link`);
  }
  // berth makes and binds run folders without following a link below the results root (a run
  // would be Blocked, UnsafePath): a link already on the way is an error here, where it is written.
  const direct =
    simple && resolvedRoot(roots.resultsReal) ? `${roots.resultsReal}/${results}` : path.join(roots.resultsReal, path.relative(roots.resultsRoot, abs));
  if (real !== direct) {
    return fail('path-escape', `results ${JSON.stringify(results)} passes through a link below the results root (to ${real}); berth never follows one there`);
  }
  return specsApart(real, roots) ?? { ok: true, value: simple ? results : toPosix(path.relative(roots.resultsRoot, abs)) };
}

/** specsApart for `real` in normal absolute form: with a normal specsReal, isWithin is two prefix tests. */
function specsApartNormal(real: string, roots: Roots): { ok: false; problems: FixtureProblem[] } | undefined {
  const specs = roots.specsReal;
  if (!resolvedRoot(specs)) return specsApart(real, roots);
  if (real === specs || real.startsWith(`${specs}/`))
    return fail('path-escape', `results folder ${real} lies inside the specs folder; choose another --results-root`);
  if (specs.startsWith(`${real}/`)) return fail('path-escape', `results folder ${real} contains the specs folder; choose another --results-root`);
  return undefined;
}

/** A results folder (real path) that lies inside the specs folder or contains it: the failure. */
function specsApart(real: string, roots: Roots): { ok: false; problems: FixtureProblem[] } | undefined {
  if (isWithin(roots.specsReal, real)) {
    return fail('path-escape', `results folder ${real} lies inside the specs folder; choose another --results-root`);
  }
  if (isWithin(real, roots.specsReal)) {
    return fail('path-escape', `results folder ${real} contains the specs folder; choose another --results-root`);
  }
  return undefined;
}

/**
 * `rel` (from the spec's folder) as a real path inside the specs folder. Synchronous calls on one
 * path: two thread-pool round trips per fixture, secret file or fromDir cost a loaded machine's
 * scheduling twice over each (measured: most of `plan`'s time over an unchanged fixture beyond its stat walk).
 */
export async function resolveInsideSpecs(specDir: string, rel: string, roots: Roots, what: string): Promise<Checked<string>> {
  const abs = path.resolve(specDir, rel);
  if (!isInside(roots.specsRoot, abs)) {
    return fail('path-escape', `${what} ${JSON.stringify(rel)} must stay inside the specs folder`);
  }
  try {
    lstatSync(abs);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return fail('missing-file', `${what} ${JSON.stringify(rel)} does not exist`);
    return fail('io', `cannot read ${what} ${JSON.stringify(rel)}: ${ioReason(err)}`);
  }
  let real: string;
  try {
    real = realpathSync.native(abs);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT') return fail('missing-file', `${what} ${JSON.stringify(rel)} is a link to nothing`);
    return fail('io', `cannot resolve ${what} ${JSON.stringify(rel)}: ${ioReason(err)}`);
  }
  if (!isInside(roots.specsReal, real)) {
    return fail('path-escape', `${what} ${JSON.stringify(rel)} resolves outside the specs folder (to ${real})`);
  }
  return { ok: true, value: real };
}
