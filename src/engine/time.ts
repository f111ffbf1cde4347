/** Times the engine reports (RFC 3339 with nanoseconds; `0001-01-01T00:00:00Z` for "never"). */

/** The time in ms since the epoch; undefined for the engine's zero time, none, or one that does not parse. */
export function engineTime(t: string | undefined): number | undefined {
  if (!t || t.startsWith('0001-')) return undefined;
  const ms = Date.parse(t);
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}
