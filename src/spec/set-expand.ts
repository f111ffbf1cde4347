/**
 * AttemptSet expansion, pure: axes (values as text), include and exclude → the children, each
 * named from its coordinates, never from its position.
 *
 * - The product of the axes (first axis slowest, values as listed), minus every cell that matches
 *   an `exclude` entry on all the axes that entry names, then the `include` cells not already
 *   there. That order is the set's admission order (`index`).
 * - A child's name depends only on the set's name and its (axis, value) pairs, so reordering
 *   axes or values, adding a value or an include renames no existing child:
 *   readable `<set>-<v1>-<v2>...` (values in axis-name order) when every value is lowercase
 *   letters and digits only and the name fits in 63 characters; otherwise
 *   `<set>--<16 hex of sha256 over the set name and the sorted (axis, value) pairs>` (the set name
 *   cut so the whole fits). The readable form never holds `--` after the set's name, so the two
 *   forms never meet; values without `-` keep readable names injective.
 */
import { SET_LIMITS } from '../constants';
import { canonicalJson } from './canonical-json';
import type { Segment } from './field-path';
import { sha256Hex } from './hash';

export interface AxisIn {
  name: string;
  /** The axis's values as text, in the order they are listed (or found). */
  values: string[];
  /** Where each value is written, for errors (a literal list item), or undefined (fromDir, range). */
  at?: (i: number) => Segment[];
}

export interface ExpandInput {
  set: string;
  axes: AxisIn[];
  include: Record<string, string>[];
  exclude: Record<string, string>[];
  /** The set's limit on its children (`spec.maxChildren`); default SET_LIMITS.maxChildren. */
  limit?: number;
}

export interface ExpandedChild {
  name: string;
  coords: Record<string, string>;
  index: number;
}

export interface ExpandIssue {
  segs: Segment[];
  message: string;
}

export type Expansion = { ok: true; children: ExpandedChild[] } | { ok: false; issues: ExpandIssue[] };

const NAME_SAFE = /^[a-z0-9]+$/;
const HASH_CHARS = 16;
const MAX_NAME = 63;

/** The child of set `set` at `coords` (axis → value): its name. */
export function childName(set: string, coords: Readonly<Record<string, string>>): string {
  const axes = Object.keys(coords).sort();
  const values = axes.map((a) => coords[a] as string);
  if (values.every((v) => NAME_SAFE.test(v))) {
    const readable = [set, ...values].join('-');
    if (readable.length <= MAX_NAME) return readable;
  }
  const hash = sha256Hex(canonicalJson({ set, cell: axes.map((a) => [a, coords[a]]) })).slice(0, HASH_CHARS);
  const prefix = set.slice(0, MAX_NAME - 2 - HASH_CHARS).replace(/-+$/, '');
  return `${prefix}--${hash}`;
}

/** The number of cells of the product, without making them (may exceed the limits). */
export function productSize(axes: readonly AxisIn[]): number {
  return axes.reduce((n, a) => n * a.values.length, 1);
}

export function expand(inp: ExpandInput): Expansion {
  const issues: ExpandIssue[] = [];
  const names = inp.axes.map((a) => a.name);
  const known = new Set(names);
  for (const a of inp.axes) {
    if (a.values.length === 0) issues.push({ segs: ['spec', 'matrix', a.name], message: `axis "${a.name}" has no values` });
    const seen = new Map<string, number>();
    a.values.forEach((v, i) => {
      const first = seen.get(v);
      if (first === undefined) seen.set(v, i);
      else
        issues.push({ segs: a.at ? a.at(i) : ['spec', 'matrix', a.name], message: `axis "${a.name}" repeats the value ${JSON.stringify(v)} (item ${first})` });
    });
  }
  inp.exclude.forEach((cell, i) => {
    for (const k of Object.keys(cell))
      if (!known.has(k)) issues.push({ segs: ['spec', 'exclude', i, k], message: `"${k}" is not an axis of the matrix (axes: ${names.join(', ')})` });
  });
  inp.include.forEach((cell, i) => {
    for (const k of Object.keys(cell))
      if (!known.has(k)) issues.push({ segs: ['spec', 'include', i, k], message: `"${k}" is not an axis of the matrix (axes: ${names.join(', ')})` });
    const missing = names.filter((n) => !(n in cell));
    if (missing.length) issues.push({ segs: ['spec', 'include', i], message: `an include names a value for every axis; missing: ${missing.join(', ')}` });
  });
  if (issues.length) return { ok: false, issues };

  const product = productSize(inp.axes);
  const limit = inp.limit ?? SET_LIMITS.maxChildren;
  if (product + inp.include.length > limit * 10) {
    return {
      ok: false,
      issues: [{ segs: ['spec', 'matrix'], message: `the matrix has ${product} cells; ${limitText(limit)}` }],
    };
  }

  const children: ExpandedChild[] = [];
  const byName = new Map<string, ExpandedChild>();
  // childName for a cell of the product, with what it asks of each value found once per value.
  const sorted = inp.axes
    .map((a, k) => [a.name, k] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, k]) => k);
  const safe = inp.axes.map((a) => a.values.map((v) => NAME_SAFE.test(v)));
  const productName = (idx: number[], coords: Record<string, string>): string => {
    let readable = inp.set;
    for (const k of sorted) {
      const i = idx[k] as number;
      if (!(safe[k] as boolean[])[i]) return childName(inp.set, coords);
      readable += `-${(inp.axes[k] as AxisIn).values[i] as string}`;
    }
    return readable.length <= MAX_NAME ? readable : childName(inp.set, coords);
  };
  const add = (coords: Record<string, string>, known?: string): string | undefined => {
    const name = known ?? childName(inp.set, coords);
    const had = byName.get(name);
    if (had) return sameCell(had.coords, coords) ? undefined : name;
    const c = { name, coords, index: children.length };
    byName.set(name, c);
    children.push(c);
    return undefined;
  };
  const excluded = (coords: Record<string, string>) => inp.exclude.some((e) => Object.entries(e).every(([k, v]) => coords[k] === v));
  const clash = (name: string) => ({ ok: false as const, issues: [{ segs: ['spec', 'matrix'], message: `two cells map to the child name "${name}"` }] });

  const idx = inp.axes.map(() => 0);
  for (let n = 0; n < product; n++) {
    const coords: Record<string, string> = {};
    inp.axes.forEach((a, k) => (coords[a.name] = a.values[idx[k] as number] as string));
    if (!excluded(coords)) {
      const bad = add(coords, productName(idx, coords));
      if (bad) return clash(bad);
    }
    for (let k = idx.length - 1; k >= 0; k--) {
      idx[k] = (idx[k] as number) + 1;
      if ((idx[k] as number) < (inp.axes[k] as AxisIn).values.length) break;
      idx[k] = 0;
    }
  }
  for (const cell of inp.include) {
    const bad = add(Object.fromEntries(names.map((n) => [n, cell[n] as string])));
    if (bad) return clash(bad);
  }
  if (children.length === 0)
    return { ok: false, issues: [{ segs: ['spec', 'exclude'], message: 'every cell of the matrix is excluded: the set has no children' }] };
  if (children.length > limit) {
    return {
      ok: false,
      issues: [{ segs: ['spec', 'matrix'], message: `the set has ${children.length} children; ${limitText(limit)}` }],
    };
  }
  return { ok: true, children };
}

/** What the limit is and how to raise it. */
export function limitText(limit: number): string {
  return limit === SET_LIMITS.maxChildren
    ? `a set may have at most ${limit} children (a guard against a typo flooding the engine); spec.maxChildren raises it on purpose`
    : `this set's spec.maxChildren allows at most ${limit}`;
}

function sameCell(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

/** Text of an axis value as the template and names see it. */
export function valueText(v: string | number | boolean): string {
  return typeof v === 'string' ? v : String(v);
}
