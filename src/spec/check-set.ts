/**
 * One AttemptSet document (schema-valid shape checked here first) → the set and its children.
 *
 * The set as a whole: labels (neither berth's set label nor an axis name), axes (literal values,
 * `fromDir` sub-folders inside the specs folder, `range`), include/exclude, `${{ }}` in the
 * template, the children limit. Any problem there makes the set invalid: none of its children
 * load, and the names it would give them are protected (what runs under them is left alone).
 *
 * Then each child: the template rendered with its coordinates, as an Attempt named after them,
 * checked exactly as a written Attempt (checkAttemptBody), its errors placed in the template.
 * One child's bad rendered spec makes that child Invalid, not its siblings.
 */
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { API_VERSION, KIND_ATTEMPT, SET_LABEL, SET_LIMITS, TASK_FAILURES } from '../constants';
import { canonicalJson } from './canonical-json';
import { templatePinKey } from './hash';
import { checkAttemptBody, placer, type BodyOptions, type ChildOutcome, type DocContext, type DocOutcome } from './check-document';
import type { Segment } from './field-path';
import { checkResultsSync, resolveInsideSpecs } from './path-checks';
import { ioReason } from './read-spec-file';
import { schemaIssues } from './schema-errors';
import { validateAttempt } from './schema';
import type { SetMember, SetPolicy, SourcePos, SpecError } from './types';
import { expand, limitText, valueText, type AxisIn } from './set-expand';
import { childLabels, fromShape, hashPieces, shapeOf, type HashPieces, type SetShape } from './set-shape';
import { renderTemplate, templateIssues } from './set-template';

type AxisValue = string | number | boolean;
type RawAxis = AxisValue[] | { fromDir?: string; range?: [number, number] };

interface RawSet {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    matrix: Record<string, RawAxis>;
    include?: Record<string, AxisValue>[];
    exclude?: Record<string, AxisValue>[];
    maxParallel?: number;
    maxChildren?: number;
    failFast?: boolean;
    maxFailed?: number;
    template: Record<string, unknown>;
    score?: { file?: string; pass?: number; infra?: string[] };
  };
}

/** As metadata.labels' maxProperties in the schema. */
const MAX_LABELS = 64;

/** Children made from their set's shape (tests turn it off to compare with every child checked in full). */
export const shapes = { enabled: true };

export async function checkSet(value: Record<string, unknown>, ctx: DocContext, name: string | undefined, pos: SourcePos): Promise<DocOutcome> {
  const place = placer(ctx);
  const schema = validateAttempt(value);
  if (!schema.valid) {
    const policy: SetPolicy = { name: name ?? '', axes: [], maxParallel: null, failFast: false, maxFailed: null, score: null, infra: [], source: pos };
    const errors = schemaIssues(schema.errors, value).map((i) => place(i.segs, i.anchor, i.code, i.message));
    return { name, pos, errors, set: { loaded: { policy, children: [], coords: [], valid: false }, children: [] } };
  }
  const doc = value as unknown as RawSet;
  const setName = doc.metadata.name;
  const errors: SpecError[] = [];
  const err = (segs: Segment[], code: SpecError['code'], message: string, anchor: 'key' | 'value' = 'value') => errors.push(place(segs, anchor, code, message));

  const axisNames = Object.keys(doc.spec.matrix);
  const labels = doc.metadata.labels ?? {};
  if (SET_LABEL in labels) err(['metadata', 'labels', SET_LABEL], 'matrix', `"${SET_LABEL}" is berth's own label: it names the set of each child`, 'key');
  for (const a of axisNames)
    if (a in labels) err(['metadata', 'labels', a], 'matrix', `"${a}" is an axis of the matrix: each child carries its own value of it as a label`, 'key');
  const labelCount = Object.keys(labels).length + axisNames.length + 1;
  if (labelCount > MAX_LABELS)
    err(
      ['metadata', 'labels'],
      'matrix',
      `each child would carry ${labelCount} labels (these, ${SET_LABEL} and one per axis); at most ${MAX_LABELS} are allowed`,
    );

  // The set's own guard (set policy: no child's hash); raised on purpose by spec.maxChildren.
  const limit = doc.spec.maxChildren ?? SET_LIMITS.maxChildren;
  const axes: AxisIn[] = [];
  for (const a of axisNames) {
    const raw = doc.spec.matrix[a] as RawAxis;
    if (Array.isArray(raw)) {
      axes.push({ name: a, values: raw.map(valueText), at: (i) => ['spec', 'matrix', a, i] });
    } else if (raw.range !== undefined) {
      const [start, end] = raw.range;
      const size = end - start;
      if (size <= 0) err(['spec', 'matrix', a, 'range'], 'matrix', `range [${start}, ${end}] has no values (it is start, start+1, ..., end-1)`);
      else if (size > limit) err(['spec', 'matrix', a, 'range'], 'matrix', `range [${start}, ${end}] has ${size} values; ${limitText(limit)}`);
      else axes.push({ name: a, values: Array.from({ length: size }, (_, i) => String(start + i)) });
    } else if (raw.fromDir !== undefined) {
      const r = await subFolders(ctx, raw.fromDir);
      if (!r.ok) err(['spec', 'matrix', a, 'fromDir'], r.code, r.message);
      else if (r.values.length === 0)
        err(['spec', 'matrix', a, 'fromDir'], 'matrix', `axis "${a}": folder ${JSON.stringify(raw.fromDir)} has no sub-folders, so the axis has no values`);
      else axes.push({ name: a, values: r.values });
    }
  }
  for (const i of templateIssues(doc.spec.template, axisNames)) err(['spec', 'template', ...i.segs], 'template', i.message);
  const infra = doc.spec.score?.infra ?? [];
  // Only a task outcome may be moved to infrastructure, never the other way (CONTRACT.md, "Pass rates that do not flatter").
  infra.forEach((r, i) => {
    if (!TASK_FAILURES.includes(r))
      err(
        ['spec', 'score', 'infra', i],
        'schema',
        `${JSON.stringify(r)} is not a task outcome: only ${TASK_FAILURES.join(', ')} may be counted as infrastructure (what the attempt could not cause already is)`,
      );
  });

  const policy: SetPolicy = {
    name: setName,
    axes: axisNames,
    maxParallel: doc.spec.maxParallel ?? null,
    ...(doc.spec.maxChildren !== undefined ? { maxChildren: doc.spec.maxChildren } : {}),
    failFast: doc.spec.failFast ?? false,
    maxFailed: doc.spec.maxFailed ?? null,
    score: doc.spec.score?.file !== undefined ? { file: doc.spec.score.file, pass: doc.spec.score.pass ?? 1 } : null,
    infra: infra.filter((r) => TASK_FAILURES.includes(r)),
    source: pos,
    templateHash: createHash('sha256').update(canonicalJson(doc.spec.template)).digest('hex'),
    pinKey: templatePinKey(doc.spec.template),
  };
  const unknown = { name, pos, errors, set: { loaded: { policy, children: [], coords: [], valid: false }, children: [] } };
  if (axes.length < axisNames.length) return unknown;

  const text = (cell: Record<string, AxisValue>) => Object.fromEntries(Object.entries(cell).map(([k, v]) => [k, valueText(v)]));
  const expansion = expand({
    set: setName,
    axes,
    include: (doc.spec.include ?? []).map(text),
    exclude: (doc.spec.exclude ?? []).map(text),
    limit,
    ...(ctx.roots.keptNames ? { kept: ctx.roots.keptNames } : {}),
  });
  if (!expansion.ok) {
    for (const i of expansion.issues) err(i.segs, 'matrix', i.message);
    return unknown;
  }
  const names = expansion.children.map((c) => c.name);
  const coords = expansion.children.map((c) => c.coords);
  if (errors.length > 0) {
    // The set is invalid as a whole: its children do not load, their names are protected.
    return { name, pos, errors, set: { loaded: { policy, children: names, coords, valid: false }, children: names.map((n) => ({ name: n, errors: [] })) } };
  }

  const fixtures: BodyOptions['fixtures'] = new Map();
  const children: ChildOutcome[] = [];
  let withErrors = 0;
  let unshown = 0;
  // After the first child checked in full, the others are made from its shape where that gives the same (set-shape.ts).
  let shape: { shape: SetShape; pieces: HashPieces } | undefined;
  let shapeTried = !shapes.enabled;
  /** Children checked in full (the others were made from the shape). */
  const full: number[] = [];
  const template = doc.spec.template;
  for (const c of expansion.children) {
    const member: SetMember = { set: policy, coords: c.coords, index: c.index };
    if (shape) {
      const results = checkResultsSync(typeof template.results === 'string' ? template.results : c.name, ctx.roots);
      const made = results.ok ? fromShape(shape.shape, c.name, results.value, member, shape.pieces) : undefined;
      if (made) {
        children.push({ name: c.name, errors: [], loaded: made });
        continue;
      }
    }
    const rendered = {
      apiVersion: API_VERSION,
      kind: KIND_ATTEMPT,
      metadata: { name: c.name, labels: childLabels(labels, setName, axisNames, c.coords) },
      spec: renderTemplate(template, c.coords),
    };
    const cell = axisNames.map((a) => `${a}=${c.coords[a] as string}`).join(', ');
    full.push(children.length);
    const r = await checkAttemptBody(rendered, ctx, { place: templatePlace, note: `child ${c.name}: ${cell}`, fixtures, set: member });
    if (!shapeTried && r.loaded && r.errors.length === 0) {
      shapeTried = true;
      const s = shapeOf(template, r.loaded, labels, axisNames);
      const pieces = s && hashPieces(s);
      if (s && pieces) shape = { shape: s, pieces };
    }
    if (r.errors.length > 0 || !r.loaded) {
      withErrors++;
      if (withErrors > SET_LIMITS.maxChildErrors) {
        unshown++;
        children.push({ name: c.name, errors: [] });
        continue;
      }
    }
    children.push({ name: c.name, errors: r.errors, ...(r.loaded ? { loaded: r.loaded } : {}) });
  }
  if (unshown > 0) {
    err(
      ['spec', 'template'],
      'template',
      `${unshown} more ${unshown === 1 ? 'child has' : 'children have'} errors (the first ${SET_LIMITS.maxChildErrors} are shown); they are invalid too`,
    );
  }
  const readsFolders = axisNames.some((a) => !Array.isArray(doc.spec.matrix[a]) && (doc.spec.matrix[a] as { fromDir?: string }).fromDir !== undefined);
  return {
    name,
    pos,
    errors,
    set: { loaded: { policy, children: names, coords, valid: true }, children, readsFolders, ...(shape ? { shape: { shape: shape.shape, full } } : {}) },
  };
}

/** A rendered child's field path → where it is written in the set: its spec is the template, its name the set's. */
function templatePlace(segs: Segment[]): Segment[] {
  if (segs[0] === 'spec') return ['spec', 'template', ...segs.slice(1)];
  if (segs[0] === 'metadata') return ['metadata', 'name'];
  return segs;
}

type SubFolders = { ok: true; values: string[] } | { ok: false; code: SpecError['code']; message: string };

/** The names of the sub-folders of `rel` (relative to the spec file, inside the specs folder), sorted; dot-folders and links skipped. */
async function subFolders(ctx: DocContext, rel: string): Promise<SubFolders> {
  const found = await resolveInsideSpecs(ctx.specDir, rel, ctx.roots, 'fromDir');
  if (!found.ok) {
    const p = found.problems[0];
    return { ok: false, code: p?.code ?? 'io', message: p?.message ?? `fromDir ${JSON.stringify(rel)} cannot be read` };
  }
  try {
    const entries = await fsp.readdir(found.value, { withFileTypes: true });
    return {
      ok: true,
      values: entries
        .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
        .map((e) => e.name)
        .sort(),
    };
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'ENOTDIR') return { ok: false, code: 'missing-file', message: `fromDir ${JSON.stringify(rel)} is not a folder` };
    return { ok: false, code: 'io', message: `cannot read fromDir ${JSON.stringify(rel)} (${path.basename(found.value)}): ${ioReason(e)}` };
  }
}
