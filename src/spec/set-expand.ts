/**
 * AttemptSet expansion, pure: axes (values as text), include and exclude → the children, each
 * named from its coordinates, never from its position.
 *
 * - The product of the axes (first axis slowest, values as listed), minus every cell that matches
 *   an `exclude` entry on all the axes that entry names, then the `include` cells not already
 *   there. That order is the set's admission order (`index`).
 * - A child's name depends only on the set's name and its (axis, value) pairs, so reordering
 *   axes or values, adding a value or an include renames no existing child. It is readable for
 *   any value, values in axis-name order:
 *   - `<set>-<v1>-<v2>...` when every value is lowercase letters and digits and it fits in 63
 *     characters (as it always was);
 *   - else `<set>-<s1>-<s2>...-<10 hex>`: each value as a slug (lowercase; every run of other
 *     characters one `-`), cut so the whole fits, then 10 hex of sha256 over the set name and the
 *     sorted (axis, value) pairs, which keeps two cells apart whatever their slugs (`gpt-4o` and
 *     `gpt_4o`, `a-b`×`c` and `a`×`b-c`). Neither form holds `--` after the set's name.
 * - Children named before these readable names (`<set>--<16 hex>`, legacyChildName) keep that
 *   name where the instance has a record under it (`kept`, from the state folder): a set that ran
 *   under the old names is not renamed, and so not run again, by an upgrade.
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
  /** Names the instance has records under: a child whose legacy name is one keeps it (legacyChildName). */
  kept?: ReadonlySet<string>;
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
/** Hex of the cell's hash a slugged name ends with (40 bits: two cells with one slug are told apart). */
const HASH_CHARS = 10;
const LEGACY_HASH_CHARS = 16;
const MAX_NAME = 63;

/** The child of set `set` at `coords` (axis → value): its name. */
export function childName(set: string, coords: Readonly<Record<string, string>>): string {
  const axes = Object.keys(coords).sort();
  const values = axes.map((a) => coords[a] as string);
  if (values.every((v) => NAME_SAFE.test(v))) {
    const readable = [set, ...values].join('-');
    if (readable.length <= MAX_NAME) return readable;
  }
  return sluggedName(set, values, cellHash(set, axes, coords));
}

/**
 * The name berth gave the child before readable names for any value: the same where every value
 * is lowercase letters and digits and it fits, else `<set>--<16 hex>` (the set name cut to fit).
 */
export function legacyChildName(set: string, coords: Readonly<Record<string, string>>): string {
  const axes = Object.keys(coords).sort();
  const values = axes.map((a) => coords[a] as string);
  if (values.every((v) => NAME_SAFE.test(v))) {
    const readable = [set, ...values].join('-');
    if (readable.length <= MAX_NAME) return readable;
  }
  const prefix = set.slice(0, MAX_NAME - 2 - LEGACY_HASH_CHARS).replace(/-+$/, '');
  return `${prefix}--${cellHash(set, axes, coords).slice(0, LEGACY_HASH_CHARS)}`;
}

function cellHash(set: string, axes: readonly string[], coords: Readonly<Record<string, string>>): string {
  return sha256Hex(canonicalJson({ set, cell: axes.map((a) => [a, coords[a]]) }));
}

/** A value as a name's piece: lowercase letters and digits, every run of anything else one `-`, none at either end. */
function slug(v: string): string {
  return v
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/**
 * `<set>-<s1>-<s2>...-<hash>`: the values come first. Too long, the set name (the same in every
 * child) is cut first, to 16 characters; then each slug (an empty one `x`) is cut to one length
 * cap, the largest that fits; then the set name further, to leave a character of each slug. More
 * axes than even that fits: `<set>-<16 hex>`.
 */
function sluggedName(set: string, values: readonly string[], hash: string): string {
  const tail = hash.slice(0, HASH_CHARS);
  const slugs = values.map((v) => slug(v) || 'x');
  const n = slugs.length;
  // room for `<set>-<s1>-...-<sn>` before `-<tail>`
  const room = MAX_NAME - tail.length - 1;
  const whole = slugs.reduce((t, x) => t + x.length, 0);
  const setLen = Math.max(1, Math.min(set.length, Math.max(room - n - whole, Math.min(SET_KEPT, room - 2 * n))));
  const setPart = cut(set, setLen);
  const budget = room - setPart.length - n;
  if (budget < n) return `${cut(set, MAX_NAME - 1 - LEGACY_HASH_CHARS)}-${hash.slice(0, LEGACY_HASH_CHARS)}`;
  // the largest cap with the capped slugs within the budget
  let lo = 1;
  let hi = Math.max(...slugs.map((x) => x.length));
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (slugs.reduce((t, x) => t + Math.min(x.length, mid), 0) <= budget) lo = mid;
    else hi = mid - 1;
  }
  return [setPart, ...slugs.map((x) => cut(x, lo)), tail].join('-');
}

/** Characters of the set's name a slugged name keeps before it cuts a value. */
const SET_KEPT = 16;

/** `s` cut to `n` characters, no `-` left at its end (at least its first character, never a `-`). */
function cut(s: string, n: number): string {
  return s.slice(0, n).replace(/-+$/, '') || s.slice(0, 1);
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
  // a cell named before readable names for any value keeps that name while the instance holds a record of it
  const kept = inp.kept !== undefined && inp.kept.size > 0 ? inp.kept : undefined;
  const named = (coords: Record<string, string>): string => {
    if (kept) {
      const legacy = legacyChildName(inp.set, coords);
      if (kept.has(legacy)) return legacy;
    }
    return childName(inp.set, coords);
  };
  const productName = (idx: number[], coords: Record<string, string>): string => {
    let readable = inp.set;
    for (const k of sorted) {
      const i = idx[k] as number;
      if (!(safe[k] as boolean[])[i]) return named(coords);
      readable += `-${(inp.axes[k] as AxisIn).values[i] as string}`;
    }
    return readable.length <= MAX_NAME ? readable : named(coords);
  };
  const add = (coords: Record<string, string>, known?: string): string | undefined => {
    const name = known ?? named(coords);
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
