/**
 * A set's child held at its last good spec (spec/last-good.ts: its set's file is broken, or its
 * fixture missing): what runs under it goes on (a run ends, is harvested and graded as under that
 * spec), and no new run starts until the file is fixed. A child that never ran is Invalid, with
 * the errors that hold it, as any attempt whose spec is broken; it starts once they are fixed.
 */
import { FINISHED_PHASES, REASONS } from '../constants';
import { formatIssue } from '../spec/issue';
import type { LoadedSpec } from '../spec/types';
import type { AttemptStatus, SpecIssue } from '../status/types';
import { recordOp } from './ops';
import type { AttemptAction, Operation } from './types';

/** The errors holding `loaded`, as a status record keeps them, and one line for them. */
function issues(loaded: LoadedSpec): { errors: SpecIssue[]; message: string } {
  const errors = (loaded.held ?? []).map((e) => ({ file: e.file, line: e.line, col: e.col, path: e.path, code: e.code, message: e.message }));
  const first = errors[0];
  const message = first ? `${formatIssue(first)}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}` : 'its spec is broken';
  return { errors, message };
}

/** What a held child does instead of a new run (`why`: the run it would have started). `pre`: the cleanup a finished run still gets. */
export function heldRun(base: { attempt: string; status?: AttemptStatus }, loaded: LoadedSpec, why: string, pre: Operation[] = []): AttemptAction {
  const { errors, message } = issues(loaded);
  const rec = base.status;
  const ran = rec !== undefined && (FINISHED_PHASES.has(rec.phase) || rec.phase === 'Running');
  if (!ran) {
    const same = rec?.phase === 'Invalid' && JSON.stringify(rec.specErrors ?? []) === JSON.stringify(errors);
    if (!same) {
      return {
        ...base,
        kind: 'invalid',
        summary: message,
        ops: [
          recordOp(base.attempt, 'spec invalid', {
            phase: 'Invalid',
            reason: REASONS.invalidSpec,
            message,
            specErrors: errors,
            run: rec?.run ?? 0,
            specHash: rec?.specHash ?? '',
          }),
        ],
      };
    }
  }
  return {
    ...base,
    kind: pre.length ? 'collect' : 'leave',
    summary: `${why}: held at its last good spec (no new run until its file is fixed): ${message}`,
    ops: pre,
  };
}
