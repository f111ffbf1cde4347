/**
 * A set's children share everything but their coordinates: once one child has been checked in
 * full (checkAttemptBody: schema, semantics, paths, normalization, hash), the others are made
 * from it by putting each child's values where the template has `${{ }}` — when that provably
 * gives what the full check would give. Pure; plain data (the spec cache on disk keeps it).
 *
 * The shape is used only when every `${{ }}` of the template is in a place whose value the check
 * treats opaquely: an argument of `command` or a plain `env` value. There the schema asks only
 * that the string has at most 131,072 characters and no NUL (OPAQUE_STRING, compared with the
 * schema by a test), no semantic check reads it, normalization copies it as it is and the hash
 * takes it as it is. A child is made from the shape only when, besides, its name is a DNS-1123
 * label of at most 63 characters (as the schema asks), it carries no axis label the checked
 * child did not (label values are already held to the schema's pattern; keys are checked in the
 * checked child) and its results folder passed the loader's check (the caller's). Any other child
 * is checked in full, so its errors are exactly what they were.
 *
 * Its hash: the canonical JSON of the checked child's hashed spec with a marker string in each
 * place that differs between children (name, results, each `${{ }}`), cut at the markers; a
 * child's canonical JSON is those pieces joined by its own values, JSON-quoted, as canonicalJson
 * writes strings. Object keys do not depend on the values, so key order and the text between
 * the places are the same for every child.
 */
import { SET_LABEL, SPEC_HASH_SCHEMA } from '../constants';
import { canonicalJson } from './canonical-json';
import { hashedSpec, sha256Hex } from './hash';
import type { LoadedSpec, NormalizedAttempt, SetMember, SourcePos } from './types';
import { EXPR, MATRIX_REF, renderTemplate } from './set-template';

/** What the schema asks of an argument of `command` and of a plain `env` value (test/unit/sets/shape.test.ts compares). */
export const OPAQUE_STRING = { maxLength: 131_072, pattern: '^[^\\u0000]*$' } as const;
/** The schema's dnsLabel (metadata.name). */
export const DNS_LABEL = { maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } as const;
/** The schema's label value (a child carries an axis label only when its value matches). */
export const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const NAME = new RegExp(DNS_LABEL.pattern);

/** A place of the normalized spec that differs between children: an argument or an env value, and the template's string there. */
export type Slot = { command: number; text: string } | { env: string; text: string };

export interface SetShape {
  /** The fully checked child's normalized spec. */
  base: NormalizedAttempt;
  source: SourcePos;
  relFile: string;
  slots: Slot[];
  /** The set's own labels (every child carries them, then the set label, then its axis labels). */
  labels: Record<string, string>;
  /** Axes in declaration order. */
  axes: string[];
  /** Axes the checked child carries as labels: a child may carry these only. */
  labelAxes: string[];
  /** The results folder is the child's name (the template names none). */
  resultsByName: boolean;
}

/** The child's labels, as check-set gives them: the set's, the set label, each axis whose value is a label value. */
export function childLabels(
  labels: Readonly<Record<string, string>>,
  setName: string,
  axes: readonly string[],
  coords: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = { ...labels, [SET_LABEL]: setName };
  for (const a of axes) {
    const v = coords[a] as string;
    if (LABEL_VALUE.test(v)) out[a] = v;
  }
  return out;
}

/**
 * The shape of a set from its template and one child checked in full, or undefined when some
 * `${{ }}` is where the shape cannot follow it (then every child is checked in full).
 */
export function shapeOf(template: Record<string, unknown>, checked: LoadedSpec, labels: Record<string, string>, axes: string[]): SetShape | undefined {
  const slots: Slot[] = [];
  for (const [k, v] of Object.entries(template)) {
    if (k === 'command' && Array.isArray(v)) {
      for (const [i, x] of v.entries()) {
        if (typeof x === 'string' && x.includes('${{')) slots.push({ command: i, text: x });
        else if (hasExpression(x)) return undefined;
      }
    } else if (k === 'env' && typeof v === 'object' && v !== null && !Array.isArray(v)) {
      for (const [name, x] of Object.entries(v)) {
        // __proto__ as a key: normalization's plain assignment is not a copy; not followed.
        if (name === '__proto__') return undefined;
        if (typeof x === 'string' && x.includes('${{')) slots.push({ env: name, text: x });
        else if (hasExpression(x)) return undefined;
      }
    } else if (hasExpression(v)) return undefined;
  }
  // A secret file is checked for each child (it is read from the host, not from the template).
  if (checked.spec.secrets.some((x) => x.fromFile !== undefined)) return undefined;
  const labelAxes = axes.filter((a) => Object.hasOwn(checked.spec.labels, a) && !Object.hasOwn(labels, a));
  const shape: SetShape = {
    base: checked.spec,
    source: checked.source,
    relFile: checked.relFile,
    slots,
    labels,
    axes,
    labelAxes,
    resultsByName: template.results === undefined,
  };
  // The shape must give back the checked child itself.
  return reproduces(shape, hashPieces(shape), checked) ? shape : undefined;
}

/** The shape makes `checked` (a child checked in full) exactly: its spec, labels and hash. */
export function reproduces(shape: SetShape, pieces: HashPieces | undefined, checked: LoadedSpec): boolean {
  if (!checked.set) return false;
  const again = fromShape(shape, checked.spec.name, checked.spec.results, checked.set, pieces);
  return (
    !!again &&
    again.hash === checked.hash &&
    canonicalJson(again.spec) === canonicalJson(checked.spec) &&
    again.source.line === checked.source.line &&
    again.source.col === checked.source.col &&
    again.source.file === checked.source.file &&
    again.relFile === checked.relFile
  );
}

const isStrings = (x: unknown): x is string[] => Array.isArray(x) && x.every((v) => typeof v === 'string');
const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** `x` has the form of a SetShape (read back from the spec cache on disk). */
export function isShape(x: unknown): x is SetShape {
  if (!isRecord(x) || !isRecord(x.base) || !isRecord(x.source) || typeof x.relFile !== 'string' || typeof x.resultsByName !== 'boolean') return false;
  if (!isStrings(x.axes) || !isStrings(x.labelAxes) || !isRecord(x.labels) || !Object.values(x.labels).every((v) => typeof v === 'string')) return false;
  const base = x.base;
  if (typeof base.name !== 'string' || typeof base.results !== 'string' || !isRecord(base.env) || (base.command !== null && !isStrings(base.command)))
    return false;
  return (
    Array.isArray(x.slots) &&
    x.slots.every((s: unknown) => {
      if (!isRecord(s) || typeof s.text !== 'string') return false;
      const keys = Object.keys(s).sort().join(',');
      if (keys === 'command,text')
        return Number.isInteger(s.command) && (s.command as number) >= 0 && (s.command as number) < ((base.command as string[] | null)?.length ?? 0);
      return keys === 'env,text' && typeof s.env === 'string' && s.env !== '__proto__' && Object.hasOwn(base.env as object, s.env);
    })
  );
}

function hasExpression(v: unknown): boolean {
  if (typeof v === 'string') return v.includes('${{');
  if (Array.isArray(v)) return v.some(hasExpression);
  if (typeof v === 'object' && v !== null) return Object.values(v).some(hasExpression);
  return false;
}

/** The canonical hashed text of the shape's base cut at the places that differ between children: name, results, each slot. */
export interface HashPieces {
  pieces: string[];
  /** What goes between pieces i and i+1: 'name', 'results' or a slot's index. */
  holes: ('name' | 'results' | number)[];
  /** Each slot's text cut at its `${{ }}`. */
  slots: CompiledText[];
}

/** A template string cut at its `${{ }}`: text, then (axis or '', the expression as written, text) for each. */
interface CompiledText {
  head: string;
  refs: { axis: string; whole: string; tail: string }[];
}

/** renderTemplate's replacement of one string, cut once: each match becomes the axis's value, or stays as written. */
function compile(text: string): CompiledText {
  const refs: CompiledText['refs'] = [];
  let head = '';
  let last = 0;
  for (const m of text.matchAll(EXPR)) {
    const lit = text.slice(last, m.index);
    if (refs.length === 0) head = lit;
    else (refs[refs.length - 1] as CompiledText['refs'][number]).tail = lit;
    refs.push({ axis: MATRIX_REF.exec(m[1] as string)?.[1] ?? '', whole: m[0], tail: '' });
    last = m.index + m[0].length;
  }
  if (refs.length === 0) return { head: text, refs };
  (refs[refs.length - 1] as CompiledText['refs'][number]).tail = text.slice(last);
  return { head, refs };
}

function render(c: CompiledText, coords: Readonly<Record<string, string>>): string {
  let out = c.head;
  for (const r of c.refs) out += (coords[r.axis] ?? r.whole) + r.tail;
  return out;
}

const MARK = '\u0000berth-shape-';

/** The hash pieces of a shape (once per set and load), or undefined when the markers cannot be told apart from the spec. */
export function hashPieces(shape: SetShape): HashPieces | undefined {
  const mark = (h: string) => `${MARK}${h}\u0000`;
  const spec = withValues(
    shape,
    mark('name'),
    shape.resultsByName ? mark('results') : shape.base.results,
    shape.slots.map((_, i) => mark(String(i))),
  );
  const text = canonicalJson({ schema: SPEC_HASH_SCHEMA, spec: hashedSpec(spec) });
  const pieces: string[] = [];
  const holes: HashPieces['holes'] = [];
  const known = new Map<string, HashPieces['holes'][number]>([['name', 'name'], ...shape.slots.map((_, i) => [String(i), i] as [string, number])]);
  if (shape.resultsByName) known.set('results', 'results');
  const quotedMark = `"${JSON.stringify(MARK).slice(1, -1)}`;
  let rest = text;
  for (;;) {
    const at = rest.indexOf(quotedMark);
    if (at < 0) break;
    const end = rest.indexOf('"', at + 1);
    let token: unknown;
    try {
      token = JSON.parse(rest.slice(at, end + 1));
    } catch {
      return undefined;
    }
    const h = typeof token === 'string' && token.endsWith('\u0000') ? known.get(token.slice(MARK.length, -1)) : undefined;
    if (h === undefined) return undefined;
    pieces.push(rest.slice(0, at));
    holes.push(h);
    rest = rest.slice(end + 1);
  }
  pieces.push(rest);
  // Each place exactly once: a marker found twice, or missing, leaves the shape unused.
  if (holes.length !== known.size || new Set(holes).size !== known.size) return undefined;
  const slots = shape.slots.map((x) => compile(x.text));
  // Cut as renderTemplate replaces (checked on the text itself).
  if (slots.some((c, i) => render(c, {}) !== renderTemplate((shape.slots[i] as Slot).text, {}))) return undefined;
  return { pieces, holes, slots };
}

/** The base spec with a child's name, results folder and slot values (labels as the base's). */
function withValues(shape: SetShape, name: string, results: string, values: string[]): NormalizedAttempt {
  const spec: NormalizedAttempt = { ...shape.base, name, results };
  if (shape.slots.some((s) => 'command' in s)) spec.command = [...(shape.base.command ?? [])];
  if (shape.slots.some((s) => 'env' in s)) spec.env = { ...shape.base.env };
  shape.slots.forEach((s, i) => {
    const v = values[i] as string;
    if ('command' in s) (spec.command as string[])[s.command] = v;
    else spec.env[s.env] = v;
  });
  return spec;
}

/**
 * The child at `member` made from the shape (`results`: its results folder as the loader's check
 * gave it), or undefined when the child must be checked in full.
 */
export function fromShape(shape: SetShape, name: string, results: string, member: SetMember, pieces: HashPieces | undefined): LoadedSpec | undefined {
  if (!pieces || name.length > DNS_LABEL.maxLength || !NAME.test(name)) return undefined;
  for (const a of shape.axes) {
    if (LABEL_VALUE.test(member.coords[a] as string) && !shape.labelAxes.includes(a)) return undefined;
  }
  const values: string[] = [];
  for (let i = 0; i < shape.slots.length; i++) {
    const v = render(pieces.slots[i] as CompiledText, member.coords);
    if (v.length > OPAQUE_STRING.maxLength || v.includes('\u0000')) return undefined;
    values.push(v);
  }
  if (!shape.resultsByName && results !== shape.base.results) return undefined;
  const spec = withValues(shape, name, results, values);
  spec.labels = childLabels(shape.labels, member.set.name, shape.axes, member.coords);
  let text = pieces.pieces[0] as string;
  pieces.holes.forEach((h, i) => {
    text += JSON.stringify(h === 'name' ? name : h === 'results' ? results : values[h]) + (pieces.pieces[i + 1] as string);
  });
  return { source: shape.source, relFile: shape.relFile, spec, hash: sha256Hex(text), set: member };
}
