/**
 * An Attempt document (a mapping) → a loaded attempt or its errors: JSON Schema, semantic
 * checks, then host paths (fixture, secret files, results), normalization and hash. A document
 * that fails its schema or semantic checks still has each host path of the expected shape
 * checked (shapedPathErrors), so every reported error is about data of the expected shape and
 * one run shows them all.
 * check-set.ts checks each rendered child of an AttemptSet the same way (load-file.ts tells the
 * two kinds apart).
 */
import { formatPath, isRecord, type Segment } from './field-path';
import { specHash } from './hash';
import { normalize } from './normalize';
import { checkBuild } from './build-context';
import { DEFAULTS } from '../constants';
import { checkFixture, checkResults, checkSecretFile, type Checked, type Roots } from './path-checks';
import type { Anchor, DocLocator } from './positions';
import type { RawAttempt } from './raw-types';
import { schemaIssues, type FieldIssue } from './schema-errors';
import { validateAttempt } from './schema';
import { semanticIssues } from './semantic';
import type { SetShape } from './set-shape';
import type { FixtureLayer, LoadedSet, LoadedSpec, NormalizedBuild, SetMember, SourcePos, SpecError, SpecErrorCode } from './types';

export interface DocContext {
  /** The spec file as users see it. */
  file: string;
  /** The spec file relative to its specs folder, forward slashes. */
  relFile: string;
  /** Absolute folder of the spec file (relative paths in the spec resolve against it). */
  specDir: string;
  roots: Roots;
  locator: DocLocator;
}

export interface DocOutcome {
  /** metadata.name when the document has a readable one. */
  name?: string;
  /** Where the document is identified: its metadata.name, else its start. */
  pos: SourcePos;
  errors: SpecError[];
  loaded?: LoadedSpec;
  /** An AttemptSet: the set and its children (empty when its matrix could not be expanded). */
  set?: {
    loaded: LoadedSet;
    children: ChildOutcome[];
    /** An axis reads a folder (`fromDir`). */
    readsFolders?: boolean;
    /** The children were made from this shape, but for those at `full` (checked in full): the spec cache on disk keeps only these. */
    shape?: { shape: SetShape; full: number[] };
  };
}

/** One child of an AttemptSet: loaded, or its errors. */
export interface ChildOutcome {
  name: string;
  errors: SpecError[];
  loaded?: LoadedSpec;
}

/** The name a document declares, if it can be read at all (also for invalid documents). */
export function declaredName(value: unknown): string | undefined {
  const meta = isRecord(value) ? value.metadata : undefined;
  const name = isRecord(meta) ? meta.name : undefined;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/** Places errors at field paths of the document being checked. */
export function placer(ctx: DocContext) {
  return (segs: Segment[], anchor: Anchor, code: SpecErrorCode, message: string, shownPath?: string): SpecError => ({
    file: ctx.file,
    ...ctx.locator.position(segs, anchor),
    path: shownPath ?? formatPath(segs),
    code,
    message,
  });
}

/** How an Attempt's check reports: where its fields are written, and what its messages add. */
export interface BodyOptions {
  /** A field path of the checked Attempt → where it is written in the source (a set's template). */
  place(segs: Segment[]): Segment[];
  /** Added to every message (which child of a set). */
  note?: string;
  /** Fixture checks already made for this document, by the fixture as written (a set's children share them). */
  fixtures?: Map<string, Promise<Checked<{ path: string; digest: string }>>>;
  /** The AttemptSet the Attempt is a child of. */
  set?: SetMember;
}

/** An Attempt document (a mapping) → its errors, or the loaded spec: schema, semantics, paths, normalization, hash. */
export async function checkAttemptBody(value: Record<string, unknown>, ctx: DocContext, o: BodyOptions): Promise<{ errors: SpecError[]; loaded?: LoadedSpec }> {
  const base = placer(ctx);
  const note = o.note ? ` (${o.note})` : '';
  const errorAt = (segs: Segment[], anchor: Anchor, code: SpecErrorCode, message: string, shownPath?: string): SpecError => {
    const at = o.place(segs);
    return base(at, anchor, code, `${message}${note}`, shownPath !== undefined ? formatPath(o.place(pathSegs(shownPath))) : undefined);
  };
  const fromIssues = (issues: FieldIssue[]): SpecError[] => issues.map((i) => errorAt(i.segs, i.anchor, i.code, i.message));

  const schema = validateAttempt(value);
  const early = schema.valid ? semanticIssues(value as unknown as RawAttempt) : schemaIssues(schema.errors, value);
  // a schema or semantic error: the host paths of the expected shape are still checked, so one
  // run of validate shows a missing fixture beside a bad field (each path field on its own)
  if (early.length > 0) return { errors: [...fromIssues(early), ...(await shapedPathErrors(value, early, ctx, o, errorAt))] };
  const doc = value as unknown as RawAttempt;

  const errors: SpecError[] = [];
  // every layer is checked as a fixture is (inside the specs folder, no link out, no special file), with its digest
  const fixtureLayers: FixtureLayer[] = [];
  const written = doc.spec.fixture;
  const layers = written === undefined ? [] : typeof written === 'string' ? [written] : written;
  for (const [i, want] of layers.entries()) {
    let check = o.fixtures?.get(want);
    if (!check) {
      check = checkFixture(ctx.specDir, want, ctx.roots);
      o.fixtures?.set(want, check);
    }
    const r = await check;
    const at: Segment[] = typeof written === 'string' ? ['spec', 'fixture'] : ['spec', 'fixture', i];
    if (r.ok) fixtureLayers.push(r.value);
    else for (const p of r.problems) errors.push(errorAt(at, 'value', p.code, p.message));
  }
  let gradeFixture: { path: string; digest: string } | null = null;
  if (doc.spec.grade?.fixture !== undefined) {
    // checked as spec.fixture is (inside the specs folder, no link out, no special file), with its digest
    const want = doc.spec.grade.fixture;
    let check = o.fixtures?.get(want);
    if (!check) {
      check = checkFixture(ctx.specDir, want, ctx.roots);
      o.fixtures?.set(want, check);
    }
    const r = await check;
    if (r.ok) gradeFixture = r.value;
    else for (const p of r.problems) errors.push(errorAt(['spec', 'grade', 'fixture'], 'value', p.code, p.message));
  }
  // spec.build, grade.build: the context checked as a fixture is (after .dockerignore), the Dockerfile read, the build hash
  const builds: { build?: NormalizedBuild; gradeBuild?: NormalizedBuild } = {};
  const network = (doc.spec.network?.mode ?? DEFAULTS.networkMode) === 'bridge';
  for (const [key, written, at] of [
    ['build', doc.spec.build, ['spec', 'build']],
    ['gradeBuild', doc.spec.grade?.build, ['spec', 'grade', 'build']],
  ] as const) {
    if (!written) continue;
    // a grader has no network: its build has none either
    const r = await checkBuild(ctx.specDir, written, key === 'build' && network, ctx.roots);
    if (r.ok) builds[key] = r.value;
    else for (const p of r.problems) errors.push(errorAt([...at, 'context'], 'value', p.code, p.message));
  }
  const secretFiles = new Map<string, string>();
  for (const [i, s] of (doc.spec.secrets ?? []).entries()) {
    if (s.fromFile === undefined) continue;
    const r = await checkSecretFile(ctx.specDir, s.fromFile, ctx.roots);
    if (r.ok) secretFiles.set(s.name, r.value);
    else for (const p of r.problems) errors.push(errorAt(['spec', 'secrets', i, 'fromFile'], 'value', p.code, p.message));
  }
  const results = await checkResults(doc.spec.results ?? doc.metadata.name, ctx.roots);
  if (!results.ok) {
    const segs: Segment[] = doc.spec.results !== undefined ? ['spec', 'results'] : ['metadata', 'name'];
    for (const p of results.problems) errors.push(errorAt(segs, 'value', p.code, p.message, 'spec.results'));
  }
  if (errors.length > 0 || !results.ok) return { errors };

  const spec = normalize(doc, {
    fixtureLayers,
    secretFiles,
    results: results.value,
    gradeFixture,
    ...builds,
  });
  const source: SourcePos = { file: ctx.file, ...ctx.locator.position(['metadata', 'name']) };
  return { errors, loaded: { source, relFile: ctx.relFile, spec, hash: specHash(spec), ...(o.set ? { set: o.set } : {}) } };
}

/**
 * The host-path errors of an Attempt that failed its schema or semantic checks: each of
 * spec.fixture (a string or a list of strings), spec.grade.fixture and spec.secrets[i].fromFile (a
 * string) and spec.results (a string) is checked as a valid spec's is, unless an earlier issue
 * lies at or under it. The default results folder (the name) is left: the name may be the fault.
 */
async function shapedPathErrors(
  value: Record<string, unknown>,
  early: readonly FieldIssue[],
  ctx: DocContext,
  o: BodyOptions,
  errorAt: (segs: Segment[], anchor: Anchor, code: SpecErrorCode, message: string, shownPath?: string) => SpecError,
): Promise<SpecError[]> {
  const spec = isRecord(value.spec) ? value.spec : {};
  const flagged = (segs: Segment[]) => early.some((i) => segs.every((s, k) => i.segs[k] === s) || i.segs.every((s, k) => segs[k] === s));
  const out: SpecError[] = [];
  const fixture = async (want: string, at: Segment[]) => {
    if (flagged(at)) return;
    let check = o.fixtures?.get(want);
    if (!check) {
      check = checkFixture(ctx.specDir, want, ctx.roots);
      o.fixtures?.set(want, check);
    }
    const r = await check;
    if (!r.ok) for (const p of r.problems) out.push(errorAt(at, 'value', p.code, p.message));
  };
  if (typeof spec.fixture === 'string') await fixture(spec.fixture, ['spec', 'fixture']);
  else if (Array.isArray(spec.fixture)) for (const [i, f] of spec.fixture.entries()) if (typeof f === 'string') await fixture(f, ['spec', 'fixture', i]);
  const grade = isRecord(spec.grade) ? spec.grade : {};
  if (typeof grade.fixture === 'string') await fixture(grade.fixture, ['spec', 'grade', 'fixture']);
  for (const [i, sec] of (Array.isArray(spec.secrets) ? spec.secrets : []).entries()) {
    const at: Segment[] = ['spec', 'secrets', i, 'fromFile'];
    if (!isRecord(sec) || typeof sec.fromFile !== 'string' || flagged(at)) continue;
    const r = await checkSecretFile(ctx.specDir, sec.fromFile, ctx.roots);
    if (!r.ok) for (const p of r.problems) out.push(errorAt(at, 'value', p.code, p.message));
  }
  if (typeof spec.results === 'string' && !flagged(['spec', 'results'])) {
    const r = await checkResults(spec.results, ctx.roots);
    if (!r.ok) for (const p of r.problems) out.push(errorAt(['spec', 'results'], 'value', p.code, p.message, 'spec.results'));
  }
  return out;
}

/** `spec.results` → ['spec', 'results'] (shown paths are plain dotted keys). */
function pathSegs(p: string): Segment[] {
  return p.split('.');
}
