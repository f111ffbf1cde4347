/**
 * Kubernetes label selectors (the `-l` of get, wait, rerun, delete): `k=v`, `k==v`, `k!=v`,
 * `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; a comma joins requirements with "and". Semantics are
 * Kubernetes': `k!=v` and `k notin (...)` also match objects without the label. Parsing is pure;
 * a selector that cannot be parsed throws a SelectorError naming the column and what was expected.
 */

export type Requirement =
  { key: string; op: 'exists' | '!exists' } | { key: string; op: '=' | '!='; value: string } | { key: string; op: 'in' | 'notin'; values: string[] };

export type Selector = Requirement[];

export class SelectorError extends Error {
  constructor(
    readonly selector: string,
    /** 0-based offset of the problem in `selector`. */
    readonly offset: number,
    readonly problem: string,
  ) {
    super(`selector ${JSON.stringify(selector)}: column ${offset + 1}: ${problem}`);
  }
}

type Tok = { kind: 'word' | 'op' | '(' | ')' | ',' | '!' | 'end'; text: string; at: number };

// Anything that is not whitespace or an operator character makes up a word; keys and values are
// checked against Kubernetes' rules after tokenizing, so a bad character is named, not skipped.
const WORD = /[^\s=!(),]/;

function tokenize(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '=' && s[i + 1] === '=') {
      out.push({ kind: 'op', text: '==', at: i });
      i += 2;
    } else if (c === '!' && s[i + 1] === '=') {
      out.push({ kind: 'op', text: '!=', at: i });
      i += 2;
    } else if (c === '=') {
      out.push({ kind: 'op', text: '=', at: i });
      i++;
    } else if (c === '!' || c === '(' || c === ')' || c === ',') {
      out.push({ kind: c, text: c, at: i });
      i++;
    } else {
      const start = i;
      while (i < s.length && WORD.test(s[i] as string)) i++;
      out.push({ kind: 'word', text: s.slice(start, i), at: start });
    }
  }
  out.push({ kind: 'end', text: '', at: s.length });
  return out;
}

const NAME = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Why `key` is not a valid label key, or undefined. */
export function keyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `invalid label key prefix ${JSON.stringify(prefix)}: a DNS subdomain is expected`;
  if (!NAME.test(name))
    return `invalid label key ${JSON.stringify(key)}: at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit`;
  return undefined;
}

/** Why `value` is not a valid label value, or undefined (the empty value is valid). */
export function valueProblem(value: string): string | undefined {
  if (value === '' || NAME.test(value)) return undefined;
  return `invalid label value ${JSON.stringify(value)}: at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit`;
}

export function parseSelector(input: string): Selector {
  const toks = tokenize(input);
  let p = 0;
  const peek = (): Tok => toks[p] as Tok;
  const next = (): Tok => toks[p++] as Tok;
  const fail = (t: Tok, problem: string): never => {
    throw new SelectorError(input, t.at, problem);
  };
  const describe = (t: Tok): string => (t.kind === 'end' ? 'the end' : JSON.stringify(t.text));
  const key = (): string => {
    const t = next();
    if (t.kind !== 'word') fail(t, `expected a label key, found ${describe(t)}`);
    const problem = keyProblem(t.text);
    if (problem) fail(t, problem);
    return t.text;
  };
  const value = (): string => {
    const t = peek();
    // `k=` (an empty value) is valid in Kubernetes: it matches the label set to "".
    if (t.kind !== 'word') return '';
    p++;
    const problem = valueProblem(t.text);
    if (problem) fail(t, problem);
    return t.text;
  };

  const reqs: Selector = [];
  if (peek().kind === 'end') return reqs;
  for (;;) {
    if (peek().kind === '!') {
      next();
      reqs.push({ key: key(), op: '!exists' });
    } else {
      const k = key();
      const t = peek();
      if (t.kind === 'op') {
        next();
        reqs.push({ key: k, op: t.text === '!=' ? '!=' : '=', value: value() });
      } else if (t.kind === 'word' && (t.text === 'in' || t.text === 'notin')) {
        next();
        const open = next();
        if (open.kind !== '(') fail(open, `expected "(" after ${t.text}, found ${describe(open)}`);
        if (peek().kind === ')') fail(peek(), `expected at least one value in the ${t.text} list`);
        const values: string[] = [];
        for (;;) {
          values.push(value());
          const sep = next();
          if (sep.kind === ')') break;
          if (sep.kind !== ',') fail(sep, `expected "," or ")" in the value list, found ${describe(sep)}`);
        }
        reqs.push({ key: k, op: t.text, values });
      } else if (t.kind === ',' || t.kind === 'end') {
        reqs.push({ key: k, op: 'exists' });
      } else {
        fail(t, `expected =, ==, !=, in, notin, "," or the end after ${JSON.stringify(k)}, found ${describe(t)}`);
      }
    }
    const sep = next();
    if (sep.kind === 'end') return reqs;
    if (sep.kind !== ',') fail(sep, `expected "," or the end, found ${describe(sep)}`);
  }
}

export function matches(sel: Selector, labels: Readonly<Record<string, string>>): boolean {
  return sel.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = has ? labels[r.key] : undefined;
    switch (r.op) {
      case 'exists':
        return has;
      case '!exists':
        return !has;
      case '=':
        return has && v === r.value;
      case '!=':
        return !has || v !== r.value;
      case 'in':
        return has && r.values.includes(v as string);
      case 'notin':
        return !has || !r.values.includes(v as string);
    }
  });
}

/** The canonical text of a selector (what `parseSelector` reads back to the same requirements). */
export function formatSelector(sel: Selector): string {
  return sel
    .map((r) => {
      switch (r.op) {
        case 'exists':
          return r.key;
        case '!exists':
          return `!${r.key}`;
        case '=':
        case '!=':
          return `${r.key}${r.op}${r.value}`;
        case 'in':
        case 'notin':
          return `${r.key} ${r.op} (${r.values.join(',')})`;
      }
    })
    .join(',');
}

/** Several `-l` flags join with "and", as the requirements of one selector do. */
export function parseSelectors(inputs: readonly string[]): Selector {
  return inputs.flatMap((s) => parseSelector(s));
}
