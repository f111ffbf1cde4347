/**
 * Secret values out of what berth writes: every occurrence of a value, in the forms below, is
 * replaced by `[redacted:<name>]`, in a buffer, a string, a JSON value or a stream; a scanner
 * only says which secrets a stream holds (for files kept as written).
 *
 * The forms of a value (docs/CONTRACT.md, berth's section):
 * - the value itself, trailing line breaks dropped (a file's last newline is no part of a key);
 * - standard and URL-safe base64 at each of the 3 alignments a value can have in an encoded
 *   stream (`base64 < file`, a JSON field, a `Basic` header): the characters that depend on the
 *   value's bytes alone (the first and last may mix with its neighbours' bits);
 * - hex, lower and upper case (`xxd -p`, `od`, a hash library's `.hex()` of the raw bytes).
 * Line breaks (\n, \r) in what is scanned are skipped over: a value printed across lines, in a
 * PEM block, or base64 wrapped at 76 columns, is still found (the redaction then covers those
 * line breaks too).
 *
 * Values shorter than `minBytes` (every short word of a log would go) or longer than `maxBytes`
 * are not redacted: the caller says so where the user sees it. A form is kept only when it is at
 * least `minBytes` long.
 *
 * The matcher is Aho-Corasick (one pass whatever the number of values) over the classes of bytes
 * the forms use, with full rows only for shallow states (see Automaton). A stream is scanned
 * chunk by chunk, and what could still be the start of a value (the automaton's depth, at most
 * the longest form less one byte, plus any line breaks inside it) is carried to the next chunk,
 * in memory only. Values are never written, logged or put in an error by this module.
 */
import type * as Stream from 'node:stream';
import type { TransformCallback } from 'node:stream';

export interface SecretValue {
  name: string;
  value: Buffer;
}

/** How many bytes of line breaks a carry may hold beyond the longest form (a value split by more is not found). */
const CARRY_SLACK = 64 * 1024;

const isBreak = (b: number): boolean => b === 0x0a || b === 0x0d;

/** `v` without its trailing line breaks. */
function trimBreaks(v: Buffer): Buffer {
  let end = v.length;
  while (end > 0 && isBreak(v[end - 1] as number)) end--;
  return v.subarray(0, end);
}

/** `v` without any line break (the matcher skips them). */
function withoutBreaks(v: Buffer): Buffer {
  return v.includes(0x0a) || v.includes(0x0d) ? Buffer.from(v.filter((b) => !isBreak(b))) : v;
}

/** The base64 characters that depend only on `v`'s bits when it starts `k` bytes into a 3-byte group. */
function base64At(v: Buffer, k: number): string {
  const text = Buffer.concat([Buffer.alloc(k), v, Buffer.alloc(2)]).toString('base64');
  return text.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + v.length)) / 6));
}

/** The forms of one value (see the top), each at least `minBytes` long, without duplicates. */
export function formsOf(value: Buffer, minBytes: number): Buffer[] {
  const v = trimBreaks(value);
  const out = new Map<string, Buffer>();
  const add = (b: Buffer) => {
    const f = withoutBreaks(b);
    if (f.length >= minBytes) out.set(f.toString('latin1'), f);
  };
  add(v);
  for (const k of [0, 1, 2]) {
    const std = base64At(v, k);
    add(Buffer.from(std, 'latin1'));
    add(Buffer.from(std.replace(/\+/g, '-').replace(/\//g, '_'), 'latin1'));
  }
  const hex = v.toString('hex');
  add(Buffer.from(hex, 'latin1'));
  add(Buffer.from(hex.toUpperCase(), 'latin1'));
  return [...out.values()];
}

/** The class of \n and \r: skipped over. */
const BREAK = 0xffff;

/** States shallower than this get a full row of transitions (one load a step); deeper ones keep their children only. */
const DENSE_DEPTH = 8;

/**
 * Aho-Corasick over byte classes, states numbered breadth first. The states shallower than
 * DENSE_DEPTH (at most that many per form: where a log's bytes keep the automaton nearly all the
 * time) have a full row in `delta`; a deeper state (a form being followed) lists its children,
 * numbered together (`first`, `kids`, the class of the edge into each in `edge`), and falls back
 * along `fail` until a shallow state takes the byte. Memory is linear in the forms' length
 * (about 30 bytes a state), never states times classes.
 */
class Automaton {
  /** Byte → class (0: a byte no form holds; BREAK: a line break). */
  readonly cls = new Uint16Array(256);
  readonly shift: number;
  readonly nDense: number;
  readonly delta: Int32Array;
  readonly first: Int32Array;
  readonly kids: Int32Array;
  readonly edge: Uint16Array;
  readonly fail: Int32Array;
  readonly depth: Int32Array;
  /** The longest form that ends at the state (0: none), and whose it is (-1: none). */
  readonly outLen: Int32Array;
  readonly outId: Int32Array;
  readonly maxLen: number;

  constructor(forms: readonly { bytes: Buffer; id: number }[]) {
    let C = 1;
    for (const f of forms) for (const b of f.bytes) if (this.cls[b] === 0) this.cls[b] = C++;
    this.cls[0x0a] = BREAK;
    this.cls[0x0d] = BREAK;
    let shift = 0;
    while (1 << shift < C) shift++;
    this.shift = shift;
    // the trie: children as sibling lists
    const tFirst: number[] = [-1];
    const tNext: number[] = [-1];
    const tCls: number[] = [0];
    const tOutLen: number[] = [0];
    const tOutId: number[] = [-1];
    let maxLen = 0;
    for (const f of forms) {
      maxLen = Math.max(maxLen, f.bytes.length);
      let s = 0;
      for (const b of f.bytes) {
        const c = this.cls[b] as number;
        let t = tFirst[s] as number;
        while (t >= 0 && tCls[t] !== c) t = tNext[t] as number;
        if (t < 0) {
          t = tFirst.length;
          tFirst.push(-1);
          tNext.push(tFirst[s] as number);
          tCls.push(c);
          tOutLen.push(0);
          tOutId.push(-1);
          tFirst[s] = t;
        }
        s = t;
      }
      if (f.bytes.length > (tOutLen[s] as number)) {
        tOutLen[s] = f.bytes.length;
        tOutId[s] = f.id;
      }
    }
    this.maxLen = maxLen;
    // breadth first: a state's children get consecutive numbers
    const n = tFirst.length;
    const order = new Int32Array(n);
    const first = new Int32Array(n);
    const kids = new Int32Array(n);
    const depth = new Int32Array(n);
    let tail = 1;
    for (let q = 0; q < n; q++) {
      const old = order[q] as number;
      first[q] = tail;
      for (let t = tFirst[old] as number; t >= 0; t = tNext[t] as number) {
        order[tail] = t;
        depth[tail] = (depth[q] as number) + 1;
        tail++;
      }
      kids[q] = tail - (first[q] as number);
    }
    const edge = new Uint16Array(n);
    const outLen = new Int32Array(n);
    const outId = new Int32Array(n);
    for (let q = 0; q < n; q++) {
      const old = order[q] as number;
      edge[q] = tCls[old] as number;
      outLen[q] = tOutLen[old] as number;
      outId[q] = tOutId[old] as number;
    }
    let nDense = 0;
    while (nDense < n && (depth[nDense] as number) < DENSE_DEPTH) nDense++;
    const W = 1 << shift;
    const delta = new Int32Array(nDense * W);
    const fail = new Int32Array(n);
    const child = (s: number, c: number): number => {
      const f0 = first[s] as number;
      for (let k = f0, e = f0 + (kids[s] as number); k < e; k++) if (edge[k] === c) return k;
      return -1;
    };
    // the state reached from `s` by class `c` (every state shallower than `s` is done)
    const go = (s: number, c: number): number => {
      for (;;) {
        if (s < nDense) return delta[(s << shift) + c] as number;
        const t = child(s, c);
        if (t >= 0) return t;
        s = fail[s] as number;
      }
    };
    for (let q = 0; q < n; q++) {
      // fail links of q's children, and q's own row if it is shallow
      const f0 = first[q] as number;
      for (let k = f0, e = f0 + (kids[q] as number); k < e; k++) {
        fail[k] = q === 0 ? 0 : go(fail[q] as number, edge[k] as number);
        const fl = fail[k] as number;
        if ((outLen[fl] as number) > (outLen[k] as number)) {
          outLen[k] = outLen[fl] as number;
          outId[k] = outId[fl] as number;
        }
      }
      if (q < nDense) {
        for (let c = 0; c < W; c++) {
          const t = child(q, c);
          delta[(q << shift) + c] = t >= 0 ? t : q === 0 ? 0 : (delta[((fail[q] as number) << shift) + c] as number);
        }
      }
    }
    this.nDense = nDense;
    this.delta = delta;
    this.first = first;
    this.kids = kids;
    this.edge = edge;
    this.fail = fail;
    this.depth = depth;
    this.outLen = outLen;
    this.outId = outId;
  }

  /** The state after `s` takes a byte of class `c`. */
  step(s: number, c: number): number {
    if (s < this.nDense) return this.delta[(s << this.shift) + c] as number;
    const { first, kids, edge, fail, delta, nDense, shift } = this;
    for (;;) {
      const f0 = first[s] as number;
      for (let k = f0, e = f0 + (kids[s] as number); k < e; k++) if (edge[k] === c) return k;
      s = fail[s] as number;
      if (s < nDense) return delta[(s << shift) + c] as number;
    }
  }
}

/**
 * Where the last `len` bytes that are not line breaks, up to `i`, begin: `i + 1 - len` unless a
 * line break lies among them (then counted back).
 */
function startOf(buf: Buffer, i: number, len: number, lastBreak: number): number {
  if (lastBreak <= i - len) return i + 1 - len;
  let j = i;
  for (let left = len; ; j--) {
    if (!isBreak(buf[j] as number)) left--;
    if (left === 0) return j;
  }
}

interface Span {
  start: number;
  end: number;
  id: number;
}

/** Which secrets a stream holds (for files kept as written): fed chunk by chunk, bounded memory. */
export interface SecretScanner {
  update(chunk: Buffer): void;
  /** The names of the secrets found so far, sorted. */
  found(): string[];
}

export class Redactor {
  /** Names of the values too short to redact (fewer than `minBytes`). */
  readonly tooShort: string[] = [];
  private readonly names: string[] = [];
  private readonly ac: Automaton | undefined;
  private readonly replacements: Buffer[] = [];

  /** Names of the values too long to redact (more than `maxBytes`: the automaton's memory is linear in them). */
  readonly tooLong: string[] = [];

  constructor(secrets: readonly SecretValue[], minBytes: number, maxBytes = Infinity) {
    const forms: { bytes: Buffer; id: number }[] = [];
    for (const s of secrets) {
      const len = withoutBreaks(trimBreaks(s.value)).length;
      if (len < minBytes || len > maxBytes) {
        const list = len < minBytes ? this.tooShort : this.tooLong;
        if (!list.includes(s.name)) list.push(s.name);
        continue;
      }
      const id = this.names.length;
      this.names.push(s.name);
      this.replacements.push(Buffer.from(`[redacted:${s.name}]`));
      for (const bytes of formsOf(s.value, minBytes)) forms.push({ bytes, id });
    }
    this.ac = forms.length ? new Automaton(forms) : undefined;
  }

  /** The names of the secrets redacted (those long enough), sorted. */
  get secretNames(): string[] {
    return [...this.names].sort();
  }

  /** Nothing to redact. */
  get empty(): boolean {
    return this.ac === undefined;
  }

  /**
   * The spans of `buf` to replace (merged where they overlap) and, unless `final`, where the
   * part that is certainly done ends: what follows may be the start of a value.
   */
  private spans(buf: Buffer, final: boolean): { spans: Span[]; done: number } {
    const ac = this.ac as Automaton;
    const { cls, delta, outLen, outId, depth, shift, nDense } = ac;
    const spans: Span[] = [];
    let s = 0;
    let lastBreak = -1;
    const n = buf.length;
    for (let i = 0; i < n; i++) {
      const c = cls[buf[i] as number] as number;
      if (c === BREAK) {
        lastBreak = i;
        continue;
      }
      s = s < nDense ? (delta[(s << shift) + c] as number) : ac.step(s, c);
      const len = outLen[s] as number;
      if (len) {
        // merged with every span it overlaps (a form inside another ends first): one replacement, named by the earliest
        const sp = { start: startOf(buf, i, len, lastBreak), end: i + 1, id: outId[s] as number };
        for (let last = spans[spans.length - 1]; last && sp.start < last.end; last = spans[spans.length - 1]) {
          spans.pop();
          if (last.start <= sp.start) sp.id = last.id;
          sp.start = Math.min(sp.start, last.start);
        }
        spans.push(sp);
      }
    }
    if (final) return { spans, done: n };
    const d = depth[s] as number;
    let done = d ? startOf(buf, n - 1, d, lastBreak) : n;
    // a later form starts at `done` or after: a span reaching past it may still grow, it waits with the rest
    const open = spans.find((sp) => sp.end > done);
    if (open) done = Math.min(done, open.start);
    const most = (this.ac as Automaton).maxLen + CARRY_SLACK;
    if (n - done > most) done = n - most;
    return { spans: spans.filter((sp) => sp.start < done), done };
  }

  /** `buf[0, done)` with its spans replaced (a span reaching past `done` is replaced whole: `done` moves to its end). */
  private rewrite(buf: Buffer, spans: Span[], done: number): { out: Buffer; done: number } {
    if (!spans.length) return { out: buf.subarray(0, done), done };
    const parts: Buffer[] = [];
    let at = 0;
    for (const sp of spans) {
      parts.push(buf.subarray(at, sp.start), this.replacements[sp.id] as Buffer);
      at = sp.end;
    }
    const end = Math.max(done, at);
    parts.push(buf.subarray(at, end));
    return { out: Buffer.concat(parts), done: end };
  }

  /** `buf` with every value replaced. */
  redact(buf: Buffer): Buffer {
    if (!this.ac) return buf;
    const { spans } = this.spans(buf, true);
    return this.rewrite(buf, spans, buf.length).out;
  }

  redactText(text: string): string {
    if (!this.ac || text === '') return text;
    const b = Buffer.from(text, 'utf8');
    const r = this.redact(b);
    return r === b ? text : r.toString('utf8');
  }

  /** A JSON-like value with every string in it (object keys too) redacted. */
  redactJson<T>(v: T): T {
    if (!this.ac) return v;
    const walk = (x: unknown): unknown => {
      if (typeof x === 'string') return this.redactText(x);
      if (Array.isArray(x)) return x.map(walk);
      if (x && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, y]) => [this.redactText(k), walk(y)]));
      return x;
    };
    return walk(v) as T;
  }

  /** A stream that passes bytes through redacted; holds back at most the longest form (plus line breaks) between chunks. */
  stream(): Stream.Transform {
    let carry: Buffer = Buffer.alloc(0);
    // node:stream loaded on first use: a command that redacts no stream does not load it (start-up, issue 55)
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return new (require('node:stream') as typeof Stream).Transform({
      transform: (chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) => {
        const c = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
        if (!this.ac) return cb(null, c);
        const buf = carry.length ? Buffer.concat([carry, c]) : c;
        const { spans, done } = this.spans(buf, false);
        const w = this.rewrite(buf, spans, done);
        carry = Buffer.from(buf.subarray(w.done)); // a copy: the chunk is not kept alive
        cb(null, w.out.length ? w.out : undefined);
      },
      flush: (cb: TransformCallback) => {
        const rest = carry;
        carry = Buffer.alloc(0);
        cb(null, rest.length ? this.redact(rest) : undefined);
      },
    });
  }

  /** A scanner that says which of the values a stream holds; its state goes from chunk to chunk. */
  scanner(): SecretScanner {
    const ac = this.ac;
    const found = new Set<number>();
    let s = 0;
    return {
      update: (chunk: Buffer) => {
        if (!ac) return;
        const { cls, delta, outLen, outId, shift, nDense } = ac;
        for (let i = 0; i < chunk.length; i++) {
          const c = cls[chunk[i] as number] as number;
          if (c === BREAK) continue;
          s = s < nDense ? (delta[(s << shift) + c] as number) : ac.step(s, c);
          if (outLen[s]) found.add(outId[s] as number);
        }
      },
      found: () => [...found].map((i) => this.names[i] as string).sort(),
    };
  }
}

/** A redactor with nothing to redact. */
export const NO_REDACTION = new Redactor([], 1);
