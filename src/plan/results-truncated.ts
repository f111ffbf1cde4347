/**
 * What results truncated past spec.harvest's caps mean for a run's outcome (pure): the harvest
 * (execute/harvest.ts) reports what its manifest left out, this decides the status.
 */
import { REASONS } from '../constants';
import type { Truncation } from '../harvest/manifest';
import type { AttemptStatus } from '../status/types';

/**
 * The status of a run whose results were truncated: a run that exited 0 says ResultsTruncated
 * (still a pass: the caps are berth's); any other keeps its reason, which decides how it
 * counts, and says it in its warnings; both say in the message what was left out.
 */
export function truncatedStatus(status: AttemptStatus, t: Truncation): AttemptStatus {
  if (!t.truncated) return status;
  const what =
    `results truncated: ${t.leftOutEntries} entries (${t.leftOutBytes} bytes of files) left out past spec.harvest ` +
    `(maxBytes ${t.maxBytes}, maxFiles ${t.maxFiles}); ${t.keptEntries} entries (${t.keptBytes} bytes) kept; manifest.json lists what was left out`;
  if (status.phase === 'Succeeded' && status.reason === REASONS.completed) return { ...status, reason: REASONS.resultsTruncated, message: what };
  return { ...status, warnings: [...(status.warnings ?? []), `${REASONS.resultsTruncated}: ${what}`] };
}
