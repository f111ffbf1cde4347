/**
 * spec.build (and grade.build) as loaded: the context resolved and walked as a fixture is (inside
 * the specs folder, no link out of the context, no special file, no file over the fixture limit),
 * but only in part: what its `.dockerignore` leaves (dockerignore.ts, Docker's rules), with the
 * Dockerfile and `.dockerignore` always in (the engine always gets them); a context whose files
 * add up to more than DEFAULTS.maxBuildContextBytes refused, never sent. Its digest comes from the
 * fixture digest cache (fixture-scan.ts: an unchanged context costs a stat walk), kept under a key
 * of its own (the context, the Dockerfile). The Dockerfile is read (dockerfile.ts): a `target` it
 * has no stage of, or an `ADD` of a URL in a build without a network, is an error of the spec.
 *
 * The build hash covers the context's digest (names, modes, contents), the Dockerfile's path,
 * `args`, `target` and whether the build has a network: what decides the image. It is what the
 * spec hash and grade hash count of a build, and names the image (`berth-build/<16 hex>`).
 */
import { lstatSync } from 'node:fs';
import { DEFAULTS } from '../constants';
import { canonicalJson } from './canonical-json';
import { goClean, isExcluded, parseDockerignore, type DockerIgnore } from './dockerignore';
import { addedUrls, baseImages, parseDockerfile, stagesFor, type Dockerfile } from './dockerfile';
import { fixtureDigest } from './fixture-digest';
import { knownFixtureDigest, scanFixture, type FixtureProblem, type TreeFilter } from './fixture-scan';
import { sha256Hex } from './hash';
import { resolveInsideSpecs, type Checked, type Roots } from './path-checks';
import { readBoundedSync } from './read-spec-file';
import { decodeUtf8 } from './utf8';
import type { NormalizedBuild } from './types';
import type { RawBuild } from './raw-types';

/** The build hash's form: change only with a reason (every built image is built again). */
export const BUILD_HASH_VERSION = 1;

const DOCKERIGNORE = '.dockerignore';

const fail = (code: FixtureProblem['code'], message: string): { ok: false; problems: FixtureProblem[] } => ({ ok: false, problems: [{ code, message }] });

/** A small file of the context, read once per version (device, inode, size, mtime, ctime): the parsed form. */
const parsedFiles = new Map<string, { sig: string; value: unknown }>();

type Read<T> = { ok: true; value: T | undefined } | { ok: false; message: string };

/**
 * The file `rel` of the context `root` (no link followed on its way), parsed by `parse`, from
 * memory when it has not changed; `value` undefined when there is no such file.
 */
function readContextFile<T>(root: string, rel: string, parse: (text: string) => { ok: true; value: T } | { ok: false; message: string }): Read<T> {
  const parts = rel.split('/');
  let at = root;
  for (const [i, part] of parts.entries()) {
    at = `${at}/${part}`;
    let st;
    try {
      st = lstatSync(at, { bigint: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: true, value: undefined };
      return { ok: false, message: `cannot read ${rel}: ${code ?? String(err)}` };
    }
    const last = i === parts.length - 1;
    if (st.isSymbolicLink()) return { ok: false, message: `${rel} is ${last ? 'a link' : 'under a link'}; berth never follows one here` };
    if (!last && !st.isDirectory()) return { ok: true, value: undefined };
    if (last && !st.isFile()) return { ok: false, message: `${rel} is not a regular file` };
    if (last) {
      const sig = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
      const kept = parsedFiles.get(at);
      if (kept?.sig === sig) return { ok: true, value: kept.value as T };
      let r;
      try {
        r = readBoundedSync(at, DEFAULTS.maxDockerfileBytes, true);
      } catch (err) {
        return { ok: false, message: `cannot read ${rel}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
      }
      if (r.kind === 'not-a-file') return { ok: false, message: `${rel} is not a regular file` };
      if (r.kind === 'too-large') return { ok: false, message: `${rel} is ${r.size} bytes; it may be at most ${DEFAULTS.maxDockerfileBytes}` };
      const text = decodeUtf8(r.bytes);
      if (!text.ok) return { ok: false, message: `${rel} is not valid UTF-8 (line ${text.line})` };
      const parsed = parse(text.text);
      if (!parsed.ok) return parsed;
      if (parsedFiles.size >= 4096) parsedFiles.delete(parsedFiles.keys().next().value as string);
      parsedFiles.set(at, { sig: `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`, value: parsed.value });
      return { ok: true, value: parsed.value };
    }
  }
  return { ok: true, value: undefined };
}

/** The Dockerfile's path as written → relative to the context, forward slashes; undefined when it leads out of it. */
export function dockerfilePath(written: string | undefined): string | undefined {
  const p = goClean((written ?? 'Dockerfile').replace(/\\/g, '/'));
  if (p.startsWith('/') || p === '..' || p.startsWith('../') || p === '.') return undefined;
  return p;
}

/** What of a context is its tree: what `.dockerignore` leaves, the Dockerfile and `.dockerignore` always. */
export function contextFilter(ig: DockerIgnore | undefined, dockerfile: string): TreeFilter | undefined {
  if (!ig || ig.patterns.length === 0) return undefined;
  const keep = (rel: string): boolean => rel === DOCKERIGNORE || rel === dockerfile || !isExcluded(ig, rel);
  return {
    keep,
    // an excluded folder is walked only when something below it may be kept: a `!` pattern, or the Dockerfile
    enter: (rel) => keep(rel) || ig.exclusions || dockerfile.startsWith(`${rel}/`),
  };
}

/** The build hash of a context's digest and the build's settings. */
export function buildHash(b: { contextDigest: string; dockerfile: string; args: Record<string, string>; target: string | null; network: boolean }): string {
  return sha256Hex(
    canonicalJson({ version: BUILD_HASH_VERSION, context: b.contextDigest, dockerfile: b.dockerfile, args: b.args, target: b.target, network: b.network }),
  );
}

interface ContextRead {
  real: string;
  dockerfile: string;
  file: Dockerfile;
  digest: string;
}

/** The context's real path, its Dockerfile parsed, and the digest of its files after .dockerignore. */
async function readContext(specDir: string, written: RawBuild, roots: Roots): Promise<Checked<ContextRead>> {
  const found = await resolveInsideSpecs(specDir, written.context, roots, 'build context');
  if (!found.ok) return found;
  const real = found.value;
  let st;
  try {
    st = lstatSync(real);
  } catch {
    return fail('missing-file', `build context ${JSON.stringify(written.context)} does not exist`);
  }
  if (!st.isDirectory()) return fail('build', `build context ${JSON.stringify(written.context)} is not a folder`);
  const dockerfile = dockerfilePath(written.dockerfile);
  if (dockerfile === undefined)
    return fail('path-escape', `dockerfile ${JSON.stringify(written.dockerfile)} must lie inside the build context ${JSON.stringify(written.context)}`);
  const ig = readContextFile(real, DOCKERIGNORE, (text) => {
    const r = parseDockerignore(text);
    return r.ok ? { ok: true, value: r.ignore } : { ok: false, message: `build context ${JSON.stringify(written.context)}: ${r.message}` };
  });
  if (!ig.ok) return fail('build', ig.message);
  const df = readContextFile(real, dockerfile, (text) => {
    const r = parseDockerfile(text);
    return r.ok ? { ok: true, value: r.file } : { ok: false, message: `${dockerfile} of build context ${JSON.stringify(written.context)}: ${r.message}` };
  });
  if (!df.ok) return fail('build', df.message);
  if (!df.value) return fail('missing-file', `build context ${JSON.stringify(written.context)} has no ${dockerfile}`);
  const filter = contextFilter(ig.value, dockerfile);
  const o = { key: `${real}\0build\0${dockerfile}`, ...(filter ? { filter } : {}), maxTotalBytes: DEFAULTS.maxBuildContextBytes, what: 'build context' };
  const known = await knownFixtureDigest(real, o);
  if (known !== undefined) return { ok: true, value: { real, dockerfile, file: df.value, digest: known } };
  const scan = await scanFixture(real, fixtureDigest, o);
  if (scan.digest === undefined) return { ok: false, problems: scan.problems };
  return { ok: true, value: { real, dockerfile, file: df.value, digest: scan.digest } };
}

/** The context read once per load (path-checks.ts Roots.buildChecks): a set's children and a fleet's specs share it. */
function readOnce(specDir: string, written: RawBuild, roots: Roots): Promise<Checked<ContextRead>> {
  const memo = roots.buildChecks;
  if (!memo) return readContext(specDir, written, roots);
  const key = `${specDir}\0${written.context}\0${written.dockerfile ?? ''}`;
  let p = memo.get(key);
  if (!p) memo.set(key, (p = readContext(specDir, written, roots)));
  return p;
}

/** spec.build (grade.build) as written → as loaded, or what is wrong with it. `network`: the build may use the engine's default network. */
export async function checkBuild(specDir: string, written: RawBuild, network: boolean, roots: Roots): Promise<Checked<NormalizedBuild>> {
  let read: Checked<ContextRead>;
  try {
    read = await readOnce(specDir, written, roots);
  } catch (err) {
    return fail('io', `cannot read build context ${JSON.stringify(written.context)}: ${(err as Error).message}`);
  }
  if (!read.ok) return read;
  const { real, dockerfile, file, digest } = read.value;
  const target = written.target ?? null;
  if (target !== null && !stagesFor(file, target))
    return fail('build', `target ${JSON.stringify(target)} is not a stage of ${dockerfile} (stages: ${file.stages.map((s) => s.name ?? '-').join(', ')})`);
  if (!network) {
    const url = addedUrls(file, target)[0];
    if (url)
      return fail(
        'build',
        `${dockerfile} line ${url.line}: ADD of a URL (${url.url}) is fetched by the engine on its network; a build has one only with spec.network.mode bridge (COPY the file into the context instead)`,
      );
  }
  const args = Object.fromEntries(Object.entries(written.args ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const hash = buildHash({ contextDigest: digest, dockerfile, args, target, network });
  const base = baseImages(file, target, args);
  const platforms = Object.keys(base.platforms).length ? { platforms: base.platforms } : {};
  return { ok: true, value: { context: real, dockerfile, args, target, network, hash, from: base.images, ...platforms } };
}

/** The context folders of a raw spec's builds, as written (the loader's claims: files there are not specs). */
export function writtenBuildContexts(spec: { build?: RawBuild; grade?: { build?: RawBuild } }): string[] {
  return [spec.build?.context, spec.grade?.build?.context].filter((c): c is string => typeof c === 'string');
}

/** Used by tests: forget the parsed Dockerfiles and .dockerignores. */
export function clearBuildFiles(): void {
  parsedFiles.clear();
}
