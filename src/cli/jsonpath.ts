/**
 * kubectl's JSONPath templates, the common subset (docs/CONTRACT.md, "Output formats"), pure:
 * what `get -o jsonpath=...`, `-o custom-columns=...` and `--sort-by=...` read.
 *
 * - A path: `.items[*].metadata.name`, `.status.phase`, `.metadata.labels['app.kubernetes.io/x']`,
 *   `.items[0]`, `.items[-1]`, `.items[1:3]`, `.spec.*` (every value of a mapping), `$` the root.
 * - A template: text with `{PATH}` in it; `{range PATH}...{end}` repeats its body for each value;
 *   `{"\t"}` and `{'\n'}` are literal strings. Several values of one path are joined with a space,
 *   as kubectl joins them. A template with no `{` is one path (kubectl wraps it too).
 * - Not supported (an error that says so): filters `[?(...)]`, recursive descent `..`, unions
 *   `[a,b]`. A key that is not there gives nothing, as kubectl with allow-missing-template-keys.
 */

export class JsonPathError extends Error {}

type Seg = { k: 'key'; key: string } | { k: 'index'; i: number } | { k: 'all' } | { k: 'slice'; from?: number; to?: number };

/** A parsed path. */
export type JsonPath = Seg[];

export function parsePath(text: string): JsonPath {
  const s = text.trim();
  const segs: Seg[] = [];
  let i = 0;
  if (s.startsWith('$')) i = 1;
  const fail = (why: string): never => {
    throw new JsonPathError(`${JSON.stringify(text)}: ${why} at column ${i + 1}`);
  };
  while (i < s.length) {
    const c = s[i];
    if (c === '.') {
      if (s[i + 1] === '.') fail('recursive descent (..) is not supported');
      i++;
      if (s[i] === '*') {
        segs.push({ k: 'all' });
        i++;
        continue;
      }
      const m = /^[A-Za-z0-9_$@-]+/.exec(s.slice(i));
      if (!m) {
        if (i >= s.length && segs.length === 0) break; // `.` alone: the root
        fail('a field name must follow "."');
      }
      segs.push({ k: 'key', key: (m as RegExpExecArray)[0] });
      i += (m as RegExpExecArray)[0].length;
    } else if (c === '[') {
      const close = s.indexOf(']', i);
      if (close < 0) fail('"[" is not closed');
      const inner = s.slice(i + 1, close).trim();
      if (inner.startsWith('?')) fail('filters [?(...)] are not supported');
      const quoted = /^(['"])(.*)\1$/.exec(inner);
      if (quoted) segs.push({ k: 'key', key: quoted[2] as string });
      else if (inner === '*') segs.push({ k: 'all' });
      else if (/^-?\d+$/.test(inner)) segs.push({ k: 'index', i: Number(inner) });
      else if (/^(-?\d+)?:(-?\d+)?$/.test(inner)) {
        const [a, b] = inner.split(':');
        segs.push({ k: 'slice', ...(a ? { from: Number(a) } : {}), ...(b ? { to: Number(b) } : {}) });
      } else if (inner.includes(',')) fail('unions [a,b] are not supported');
      else fail(`"[${inner}]" is not an index, a slice, * or a quoted key`);
      i = close + 1;
    } else if (segs.length === 0 && /[A-Za-z_]/.test(c as string)) {
      // kubectl takes `items[*]` for `.items[*]`
      const m = /^[A-Za-z0-9_$@-]+/.exec(s.slice(i)) as RegExpExecArray;
      segs.push({ k: 'key', key: m[0] });
      i += m[0].length;
    } else {
      fail(`unexpected ${JSON.stringify(c)}`);
    }
  }
  return segs;
}

/** Every value `path` reaches in `data` (none when a key is not there). */
export function evalPath(path: JsonPath, data: unknown): unknown[] {
  let cur: unknown[] = [data];
  for (const seg of path) {
    const next: unknown[] = [];
    for (const v of cur) {
      if (seg.k === 'key') {
        if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, seg.key))
          next.push((v as Record<string, unknown>)[seg.key]);
      } else if (seg.k === 'all') {
        if (Array.isArray(v)) next.push(...(v as unknown[]));
        else if (v !== null && typeof v === 'object') next.push(...Object.values(v));
      } else if (Array.isArray(v)) {
        if (seg.k === 'index') {
          const at = seg.i < 0 ? v.length + seg.i : seg.i;
          if (at >= 0 && at < v.length) next.push(v[at]);
        } else {
          next.push(...(v as unknown[]).slice(seg.from ?? 0, seg.to ?? v.length));
        }
      }
    }
    cur = next;
  }
  return cur;
}

/** A value as kubectl prints it: strings as they are, everything else as JSON. */
export function valueText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  return JSON.stringify(v);
}

type Node = { t: 'text'; text: string } | { t: 'path'; path: JsonPath } | { t: 'range'; path: JsonPath; body: Node[] };

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'" };

/** A parsed template (`{.items[*].metadata.name}`, `{range .items[*]}{.metadata.name}{"\n"}{end}`). */
export function parseTemplate(text: string): Node[] {
  const src = text.includes('{') ? text : `{${text}}`;
  const root: Node[] = [];
  const stack: Node[][] = [root];
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf('{', i);
    const top = stack[stack.length - 1] as Node[];
    if (open < 0) {
      top.push({ t: 'text', text: src.slice(i) });
      break;
    }
    if (open > i) top.push({ t: 'text', text: src.slice(i, open) });
    const close = src.indexOf('}', open);
    if (close < 0) throw new JsonPathError(`${JSON.stringify(text)}: "{" at column ${open + 1} is not closed`);
    const inner = src.slice(open + 1, close).trim();
    const lit = /^(['"])(.*)\1$/s.exec(inner);
    if (lit) top.push({ t: 'text', text: (lit[2] as string).replace(/\\(.)/g, (_m, c: string) => ESCAPES[c] ?? c) });
    else if (inner === 'end') {
      if (stack.length === 1) throw new JsonPathError(`${JSON.stringify(text)}: {end} without {range}`);
      stack.pop();
    } else if (inner.startsWith('range ')) {
      const node: Node = { t: 'range', path: parsePath(inner.slice(6)), body: [] };
      top.push(node);
      stack.push(node.body);
    } else top.push({ t: 'path', path: parsePath(inner) });
    i = close + 1;
  }
  if (stack.length > 1) throw new JsonPathError(`${JSON.stringify(text)}: {range} without {end}`);
  return root;
}

/** The template filled in from `data`. */
export function renderTemplate(nodes: Node[], data: unknown): string {
  let out = '';
  for (const n of nodes) {
    if (n.t === 'text') out += n.text;
    else if (n.t === 'path') out += evalPath(n.path, data).map(valueText).join(' ');
    else for (const v of evalPath(n.path, data)) out += renderTemplate(n.body, v);
  }
  return out;
}

/** `NAME:.metadata.name,RESULT:.status.phase` → columns; each spec a header and a path. */
export function parseCustomColumns(text: string): { header: string; path: JsonPath }[] {
  const cols = text.split(',').filter((c) => c.trim() !== '');
  if (!cols.length) throw new JsonPathError('custom-columns: give HEADER:.path,... (e.g. NAME:.metadata.name,PHASE:.status.phase)');
  return cols.map((c) => {
    const at = c.indexOf(':');
    if (at <= 0) throw new JsonPathError(`custom-columns: ${JSON.stringify(c)} is not HEADER:.path`);
    const p = c.slice(at + 1).trim();
    return { header: c.slice(0, at).trim(), path: parsePath(p.replace(/^\{(.*)\}$/, '$1')) };
  });
}

/** A custom-columns cell: the path's values joined by `,`, `<none>` when there are none (kubectl's). */
export function cellText(path: JsonPath, item: unknown): string {
  const vs = evalPath(path, item).filter((v) => v !== undefined && v !== null);
  return vs.length ? vs.map(valueText).join(',') : '<none>';
}

/** Items sorted by the value `path` reaches in each (numbers by value, the rest as text; items without one first), stably. */
export function sortByPath<T>(items: readonly T[], path: JsonPath, docOf: (t: T) => unknown): T[] {
  const key = (t: T) => evalPath(path, docOf(t))[0];
  const keyed = items.map((t, i) => ({ t, i, v: key(t) }));
  keyed.sort((a, b) => compare(a.v, b.v) || a.i - b.i);
  return keyed.map((k) => k.t);
}

function compare(a: unknown, b: unknown): number {
  const missing = (x: unknown) => x === undefined || x === null;
  if (missing(a) || missing(b)) return missing(a) === missing(b) ? 0 : missing(a) ? -1 : 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = valueText(a);
  const y = valueText(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
