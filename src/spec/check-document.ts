/**
 * One YAML document → a loaded attempt or its errors: mapping check, JSON Schema, semantic
 * checks, then host paths (fixture, secret files, results), normalization and hash. Later stages
 * run only when earlier ones pass, so every reported error is about data of the expected shape.
 */
import { formatPath, isRecord, type Segment } from './field-path';
import { specHash } from './hash';
import { normalize } from './normalize';
import { checkFixture, checkResults, checkSecretFile, type Roots } from './path-checks';
import type { Anchor, DocLocator } from './positions';
import type { RawAttempt } from './raw-types';
import { schemaIssues, type FieldIssue } from './schema-errors';
import { validateAttempt } from './schema';
import { semanticIssues } from './semantic';
import type { LoadedSpec, SourcePos, SpecError, SpecErrorCode } from './types';

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
}

/** The name a document declares, if it can be read at all (also for invalid documents). */
export function declaredName(value: unknown): string | undefined {
  const meta = isRecord(value) ? value.metadata : undefined;
  const name = isRecord(meta) ? meta.name : undefined;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

export async function checkDocument(value: unknown, ctx: DocContext): Promise<DocOutcome> {
  const name = declaredName(value);
  const pos: SourcePos = { file: ctx.file, ...ctx.locator.position(name !== undefined ? ['metadata', 'name'] : []) };
  const errorAt = (segs: Segment[], anchor: Anchor, code: SpecErrorCode, message: string, shownPath?: string): SpecError => ({
    file: ctx.file,
    ...ctx.locator.position(segs, anchor),
    path: shownPath ?? formatPath(segs),
    code,
    message,
  });
  const fromIssues = (issues: FieldIssue[]): SpecError[] => issues.map((i) => errorAt(i.segs, i.anchor, i.code, i.message));

  if (!isRecord(value)) {
    const got = Array.isArray(value) ? 'a list' : `${JSON.stringify(value)}`;
    return { name, pos, errors: [errorAt([], 'value', 'not-a-mapping', `a spec must be a mapping with apiVersion, kind, metadata and spec (got ${got})`)] };
  }

  const schema = validateAttempt(value);
  if (!schema.valid) return { name, pos, errors: fromIssues(schemaIssues(schema.errors, value)) };
  const doc = value as unknown as RawAttempt;

  const semantic = semanticIssues(doc);
  if (semantic.length > 0) return { name, pos, errors: fromIssues(semantic) };

  const errors: SpecError[] = [];
  let fixture: { path: string; digest: string } | null = null;
  if (doc.spec.fixture !== undefined) {
    const r = await checkFixture(ctx.specDir, doc.spec.fixture, ctx.roots);
    if (r.ok) fixture = r.value;
    else for (const p of r.problems) errors.push(errorAt(['spec', 'fixture'], 'value', p.code, p.message));
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
  if (errors.length > 0 || !results.ok) return { name, pos, errors };

  const spec = normalize(doc, {
    fixture: fixture?.path ?? null,
    fixtureDigest: fixture?.digest ?? null,
    secretFiles,
    results: results.value,
  });
  return { name, pos, errors, loaded: { source: pos, relFile: ctx.relFile, spec, hash: specHash(spec) } };
}
