/**
 * Durations on the command line, one syntax for every flag: `500ms`, `30s`, `2m`, `1h`, `1.5h`,
 * or units joined as Go writes them (`1h30m`, `2m30s`); a bare number is seconds.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

const WHOLE = /^(\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/**
 * Milliseconds, or undefined when `text` is not a duration. Zero is a duration only with
 * `{ zero: true }` (a back-off of 0 means none; a timeout of 0 means nothing).
 */
export function parseDuration(text: string, o: { zero?: boolean } = {}): number | undefined {
  // `30 s` reads as `30s`, as it always has
  const t = text.trim().replace(/(\d)\s+(?=ms|s|m|h)/g, '$1');
  let ms: number;
  if (/^\d+(?:\.\d+)?$/.test(t)) ms = Number(t) * 1000;
  else if (WHOLE.test(t)) ms = [...t.matchAll(PART)].reduce((sum, m) => sum + Number(m[1]) * (UNIT_MS[m[2] as string] ?? NaN), 0);
  else return undefined;
  ms = Math.round(ms);
  if (!Number.isSafeInteger(ms)) return undefined;
  return ms > 0 || (o.zero && ms === 0) ? ms : undefined;
}

/** What a duration flag's error says: the syntax, with examples. */
export const DURATION_SYNTAX = 'a duration such as 500ms, 30s, 2m, 1h or 1h30m (a bare number is seconds)';

/** A duration as berth prints it: `500ms`, `30s`, `2m`, `1h30m`. */
export function formatDuration(ms: number): string {
  if (ms < 1000 || ms % 1000) return ms < 1000 ? `${ms}ms` : `${ms / 1000}s`;
  let s = ms / 1000;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}`;
}
