/** How the report writes numbers and times: fixed, locale-free (the page is the same wherever it is made). */

export function ms(d: number | null): string {
  if (d === null) return '-';
  if (d < 1000) return `${Math.round(d)}ms`;
  const s = d / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

export const pct = (r: number | null): string => (r === null ? '-' : `${(r * 100).toFixed(r === 1 || r === 0 ? 0 : 1)}%`);

/** A time as UTC, to the second. */
export const utc = (t: number | null): string =>
  t === null
    ? '-'
    : new Date(t)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');

export const coordText = (c: Readonly<Record<string, string>>): string =>
  Object.entries(c)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
