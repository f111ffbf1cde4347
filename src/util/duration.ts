/** Durations on the command line: `500ms`, `30s`, `2m`, `1h`, or a bare number of seconds. */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds, or undefined when `text` is not a positive duration. */
export function parseDuration(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) return undefined;
  const ms = Math.round(Number(m[1]) * (UNIT_MS[m[2] ?? 's'] ?? 1000));
  return ms > 0 && Number.isFinite(ms) ? ms : undefined;
}
