/**
 * A record's touches in words, apart from record.ts (which reads the touch files, and loads
 * readline for it): get, describe and the report show them without reading any (start-up, issue 55).
 */
import type { Touched } from '../status/types';

/** In words: `3 execs, 1 copy`. */
export function touchedText(t: Touched): string {
  const parts: string[] = [];
  if (t.execs) parts.push(`${t.execs} exec${t.execs === 1 ? '' : 's'}`);
  if (t.copies) parts.push(`${t.copies} ${t.copies === 1 ? 'copy' : 'copies'}`);
  return parts.join(', ');
}
