/**
 * One spec file → its documents' outcomes. Reading, encoding or YAML problems make the whole
 * file unreadable (nothing in it loads; names that can still be read are reported so what runs
 * under them is protected); otherwise each document is checked on its own.
 */
import * as path from 'node:path';
import { isScalar } from 'yaml';
import { DEFAULTS, KIND_ATTEMPT, KIND_ATTEMPT_SET } from '../constants';
import { checkAttemptBody, declaredName, placer, type DocContext, type DocOutcome } from './check-document';
import type * as CheckSet from './check-set';
import { isRecord } from './field-path';
import type { Roots } from './path-checks';
import { sha256Hex } from './hash';
import { DocLocator } from './positions';
import { readSpecFile } from './read-spec-file';
import type { SpecFile } from './walk';
import { parseYamlStream } from './yaml-parse';
import { toPlain } from './yaml-to-plain';
import type { RawBuild } from './raw-types';
import type { LoadedSpec, SourcePos, SpecError } from './types';

export interface FileOutcome {
  /** Outcomes of the file's non-empty documents. */
  docs: DocOutcome[];
  /** Errors that belong to the file rather than to one checked document. */
  errors: SpecError[];
  /** The file could not be read or parsed far enough to trust what it declares. */
  unreadable: boolean;
  /** sha256 of the bytes the outcome was read from (strict UTF-8: the text's encoding is those bytes). */
  content?: string;
  /** The fixtures its attempts copy in, as written and as found (file-cache.ts keeps such an outcome while they hold). */
  fixtures?: FixtureDep[];
  /**
   * The folders and files its documents use as fixtures (every layer, the grader's too) or as a
   * set's `fromDir`, absolute (as written, resolved against the file's folder, and as found): the
   * walk's files inside them are not specs (loader.ts `dropClaimed`).
   */
  claims?: string[];
  /**
   * Its outcome depends on its bytes alone though it has errors: YAML that does not parse, or
   * documents none of which is an Attempt or an AttemptSet (another tool's YAML, as a repository
   * used as a fixture holds). Kept in memory by its signature (file-cache.ts) and not read again
   * at every update of a folder (folder-load.ts).
   */
  foreign?: boolean;
}

/** One layer of an attempt's fixture (a single fixture is one): as written in the spec, against its folder, and its real path and digest when the file
 * was loaded. */
export interface FixtureDep {
  specDir: string;
  written: string;
  path: string;
  digest: string;
  /** An attempt's build context, not a fixture layer: `digest` is the build hash, `path` the context; checked again as written (build-context.ts). */
  build?: { raw: RawBuild; network: boolean };
}

/** Paths of a fixture field as written or as loaded: one path, or a list of layers (paths, or `{path}`). */
function fixturePaths(v: unknown): string[] {
  const one = (x: unknown): string[] => (typeof x === 'string' ? [x] : isRecord(x) && typeof x.path === 'string' ? [x.path] : []);
  return Array.isArray(v) ? v.flatMap(one) : one(v);
}

/**
 * What a raw document claims, as written (Attempts and AttemptSets only: another tool's YAML claims
 * nothing): its fixtures (and the grader's), a set template's when not templated, a set's `fromDir`s.
 */
function writtenClaims(value: unknown, specDir: string, into: Set<string>): void {
  if (!isRecord(value) || (value.kind !== KIND_ATTEMPT && value.kind !== KIND_ATTEMPT_SET) || !isRecord(value.spec)) return;
  const add = (p: string) => {
    if (p !== '' && !p.includes('${{')) into.add(path.resolve(specDir, p));
  };
  const body = value.kind === KIND_ATTEMPT_SET ? value.spec.template : value.spec;
  if (isRecord(body)) {
    fixturePaths(body.fixture).forEach(add);
    if (isRecord(body.grade)) fixturePaths(body.grade.fixture).forEach(add);
    // a build context is claimed as a fixture is: its files are not specs
    if (isRecord(body.build) && typeof body.build.context === 'string') add(body.build.context);
    if (isRecord(body.grade) && isRecord(body.grade.build) && typeof body.grade.build.context === 'string') add(body.grade.build.context);
  }
  if (value.kind === KIND_ATTEMPT_SET && isRecord(value.spec.matrix)) {
    for (const axis of Object.values(value.spec.matrix)) if (isRecord(axis) && typeof axis.fromDir === 'string') add(axis.fromDir);
  }
}

/** What a checked spec uses as fixtures, as found (a set's templated fixtures are known only here). */
function loadedClaims(l: LoadedSpec | undefined, into: Set<string>): void {
  if (!l) return;
  for (const layer of l.spec.fixtureLayers) into.add(layer.path);
  for (const p of fixturePaths(l.spec.grade?.fixture)) into.add(p);
  if (l.spec.build) into.add(l.spec.build.context);
  if (l.spec.grade?.build) into.add(l.spec.grade.build.context);
}

/** `spec.fixture` of a raw document, as written: its layers (one for a single fixture). */
function writtenFixture(value: unknown): string[] | undefined {
  const spec = isRecord(value) ? value.spec : undefined;
  if (!isRecord(spec)) return undefined;
  if (typeof spec.fixture === 'string') return [spec.fixture];
  return Array.isArray(spec.fixture) && spec.fixture.every((x) => typeof x === 'string') ? (spec.fixture as string[]) : undefined;
}

/** One YAML document → its outcome: an Attempt (check-document.ts) or an AttemptSet (check-set.ts). */
export async function checkDocument(value: unknown, ctx: DocContext): Promise<DocOutcome> {
  const name = declaredName(value);
  const pos: SourcePos = { file: ctx.file, ...ctx.locator.position(name !== undefined ? ['metadata', 'name'] : []) };
  if (!isRecord(value)) {
    const got = Array.isArray(value) ? 'a list' : `${JSON.stringify(value)}`;
    return { name, pos, errors: [placer(ctx)([], 'value', 'not-a-mapping', `a spec must be a mapping with apiVersion, kind, metadata and spec (got ${got})`)] };
  }
  if (value.kind === KIND_ATTEMPT_SET) {
    // Lazy: only folders that hold sets pay for loading the set code.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { checkSet } = require('./check-set') as typeof CheckSet;
    return checkSet(value, ctx, name, pos);
  }
  return { name, pos, ...(await checkAttemptBody(value, ctx, { place: (segs) => segs })) };
}

export async function loadFile(f: SpecFile, file: string, roots: Roots): Promise<FileOutcome> {
  const read = await readSpecFile(f.abs, DEFAULTS.maxSpecFileBytes, f.linked !== true);
  if (!read.ok) {
    return { docs: [], unreadable: true, errors: [{ file, line: read.line, col: read.col, path: '', code: read.code, message: read.message }] };
  }
  return { ...(await loadText(read.text, f, file, roots)), content: sha256Hex(read.text) };
}

/** The text of spec file `f` → its outcomes (everything after reading and decoding). */
export async function loadText(text: string, f: SpecFile, file: string, roots: Roots): Promise<FileOutcome> {
  const stream = parseYamlStream(text, DEFAULTS.maxNestingDepth);
  const errors: SpecError[] = stream.issues.map((i) => ({ file, ...stream.lineCounter.linePos(i.offset), path: '', code: i.code, message: i.message }));

  const plain = stream.docs
    .filter((d) => !(d.contents === null || (isScalar(d.contents) && d.contents.value === null)))
    .map((doc) => {
      const p = toPlain(doc, { maxDepth: DEFAULTS.maxNestingDepth, maxAliasCount: DEFAULTS.maxAliasCount }, stream.lineCounter);
      const locator = new DocLocator(doc, stream.lineCounter, p.aliasTargets);
      for (const i of p.issues) errors.push({ file, ...stream.lineCounter.linePos(i.offset), path: i.path, code: i.code, message: i.message });
      return { value: p.value, locator };
    });

  const specDir = path.dirname(f.abs);
  const claimed = new Set<string>();
  for (const { value } of plain) writtenClaims(value, specDir, claimed);
  const claims = () => (claimed.size > 0 ? { claims: [...claimed].sort() } : {});

  if (errors.length > 0) {
    // Unreadable as a whole: report only the YAML problems, and the names we can still see.
    const docs = plain.map(({ value, locator }): DocOutcome => {
      // An AttemptSet's name is a set's, not an attempt's: it protects no attempt of that name
      // (its children are protected by the file, and keep their set's last good expansion: last-good.ts).
      const name = isRecord(value) && value.kind === KIND_ATTEMPT_SET ? undefined : declaredName(value);
      return { name, pos: { file, ...locator.position(name !== undefined ? ['metadata', 'name'] : []) }, errors: [] };
    });
    return { docs, errors, unreadable: true, foreign: true, ...claims() };
  }

  const docs: DocOutcome[] = [];
  const fixtures: FixtureDep[] = [];
  for (const { value, locator } of plain) {
    const d = await checkDocument(value, { file, relFile: f.rel, specDir, roots, locator });
    docs.push(d);
    loadedClaims(d.loaded, claimed);
    for (const c of d.set?.children ?? []) loadedClaims(c.loaded, claimed);
    const spec = d.loaded?.spec;
    const written = writtenFixture(value);
    // one per layer, as written and as found (same count and order: check-document.ts)
    if (spec?.fixtureLayers.length && written?.length === spec.fixtureLayers.length) {
      for (const [i, l] of spec.fixtureLayers.entries()) fixtures.push({ specDir, written: written[i] as string, path: l.path, digest: l.digest });
    }
    // an attempt's build context holds the outcome as a fixture does (file-cache.ts fixtureBound)
    const build = isRecord(value) && isRecord(value.spec) ? (value.spec.build as RawBuild | undefined) : undefined;
    if (spec?.build && build)
      fixtures.push({ specDir, written: build.context, path: spec.build.context, digest: spec.build.hash, build: { raw: build, network: spec.build.network } });
  }
  const foreign = docs.length > 0 && plain.every(({ value }) => !isRecord(value) || (value.kind !== KIND_ATTEMPT && value.kind !== KIND_ATTEMPT_SET));
  return { docs, errors: [], unreadable: false, ...(fixtures.length ? { fixtures } : {}), ...claims(), ...(foreign ? { foreign } : {}) };
}
