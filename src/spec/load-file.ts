/**
 * One spec file → its documents' outcomes. Reading, encoding or YAML problems make the whole
 * file unreadable (nothing in it loads; names that can still be read are reported so what runs
 * under them is protected); otherwise each document is checked on its own.
 */
import * as path from 'node:path';
import { isScalar } from 'yaml';
import { DEFAULTS, KIND_ATTEMPT_SET } from '../constants';
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
import type { SourcePos, SpecError } from './types';

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
}

/** One layer of an attempt's fixture (a single fixture is one): as written in the spec, against its folder, and its real path and digest when the file was loaded. */
export interface FixtureDep {
  specDir: string;
  written: string;
  path: string;
  digest: string;
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

  if (errors.length > 0) {
    // Unreadable as a whole: report only the YAML problems, and the names we can still see.
    const docs = plain.map(({ value, locator }): DocOutcome => {
      const name = declaredName(value);
      return { name, pos: { file, ...locator.position(name !== undefined ? ['metadata', 'name'] : []) }, errors: [] };
    });
    return { docs, errors, unreadable: true };
  }

  const docs: DocOutcome[] = [];
  const fixtures: FixtureDep[] = [];
  const specDir = path.dirname(f.abs);
  for (const { value, locator } of plain) {
    const d = await checkDocument(value, { file, relFile: f.rel, specDir, roots, locator });
    docs.push(d);
    const spec = d.loaded?.spec;
    const written = writtenFixture(value);
    // one per layer, as written and as found (same count and order: check-document.ts)
    if (spec?.fixtureLayers.length && written?.length === spec.fixtureLayers.length) {
      for (const [i, l] of spec.fixtureLayers.entries()) fixtures.push({ specDir, written: written[i] as string, path: l.path, digest: l.digest });
    }
  }
  return { docs, errors: [], unreadable: false, ...(fixtures.length ? { fixtures } : {}) };
}
