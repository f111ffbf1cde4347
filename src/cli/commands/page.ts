/**
 * `get --limit N [--continue TOKEN]`, as kubectl's limit and continue (issue 55): a page of at
 * most N attempts, and a token for the next one, in the list's `metadata.continue` (with
 * `remainingItemCount`) and, for a person, on stderr. The token is opaque to users; it holds
 * where the page ended: the last name shown (rows are in name order, so a page starts after it
 * whatever was added or removed meanwhile, as kubectl's continue does), or with `--sort-by` that
 * path and the number of rows before the next page.
 */
import { UsageError } from '../usage';

interface Token {
  v: 1;
  /** Name order: the next page starts after this name. */
  after?: string;
  /** --sort-by order: its path, and the rows before the next page. */
  sortBy?: string;
  offset?: number;
}

export interface Page<T> {
  rows: T[];
  /** Rows of the full list before this page. */
  before: number;
  /** Present when rows follow this page. */
  next?: { continue: string; remainingItemCount: number };
}

export function encodeToken(t: Token): string {
  return Buffer.from(JSON.stringify(t)).toString('base64url');
}

function decodeToken(text: string): Token {
  let t: unknown;
  try {
    t = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    t = undefined;
  }
  const ok =
    typeof t === 'object' &&
    t !== null &&
    (t as Token).v === 1 &&
    (typeof (t as Token).after === 'string' ||
      (typeof (t as Token).sortBy === 'string' && Number.isInteger((t as Token).offset) && ((t as Token).offset ?? -1) >= 0));
  if (!ok) throw new UsageError(`--continue ${JSON.stringify(text.slice(0, 80))}: not a token berth get gave (its metadata.continue)`);
  return t as Token;
}

/** The page of `rows` (already sorted: by name, or by `sortBy`) that `limit` and `continue` ask for. */
export function pageOf<T extends { name: string }>(rows: T[], o: { limit?: number; continue?: string; sortBy?: string }): Page<T> {
  let start = 0;
  if (o.continue !== undefined) {
    const t = decodeToken(o.continue);
    if (o.sortBy !== undefined) {
      if (t.sortBy !== o.sortBy)
        throw new UsageError(`--continue: the token is of a listing ${t.sortBy ? `sorted by ${t.sortBy}` : 'in name order'}; give the same --sort-by`);
      start = Math.min(t.offset ?? 0, rows.length);
    } else {
      if (t.after === undefined) throw new UsageError(`--continue: the token is of a listing sorted by ${t.sortBy}; give the same --sort-by`);
      const after = t.after;
      // the first name after the token's (rows are in name order)
      let lo = 0;
      let hi = rows.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((rows[mid] as T).name <= after) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
    }
  }
  const end = o.limit === undefined ? rows.length : Math.min(rows.length, start + o.limit);
  const page: Page<T> = { rows: start === 0 && end === rows.length ? rows : rows.slice(start, end), before: start };
  if (end < rows.length) {
    const last = rows[end - 1];
    const token: Token = o.sortBy !== undefined || !last ? { v: 1, sortBy: o.sortBy ?? '', offset: end } : { v: 1, after: last.name };
    page.next = { continue: encodeToken(token), remainingItemCount: rows.length - end };
  }
  return page;
}
