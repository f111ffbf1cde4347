/**
 * The attempts a resync need not plan again (issue 55: a controller over 100,000 specs, nearly all
 * finished long ago, planned every one of them every resync, ~1 s of CPU each time).
 *
 * An attempt is quiet when its last plan left it alone for good: finished (a final phase), no
 * container, graded by nothing (no grader, no set score), no request on its record, and the plan
 * had nothing to do for it and no time to look again. Such a plan is a function of its spec, its
 * record and what the engine shows of it; a resync skips it while all three are the very ones it
 * was planned from: the same loaded spec (a load hands on the specs of files that did not change),
 * the same record (the store replaces a record it writes), and still nothing on the engine (the
 * resync's lists are fresh). Anything else about it (its file, its record, a container, a
 * request: each changes one of the three) plans it again, as does every batch that names it.
 * A full plan would have made no action for it either: the skip changes no action, only the
 * work (and the plan's `unchanged`, which then holds the attempts planned).
 */
import { FINISHED_PHASES } from '../constants';
import type { Snapshot } from '../observe/types';
import { specIndex } from '../spec/spec-index';
import type { Plan } from '../plan/types';
import type { LoadResult, LoadedSpec } from '../spec/types';
import type { AttemptStatus } from '../status/types';

interface Quiet {
  spec: LoadedSpec;
  rec: AttemptStatus;
}

export class QuietAttempts {
  private readonly quiet = new Map<string, Quiet>();

  /** How many attempts the last resync skipped (logs, tests). */
  skipped = 0;
  /** What the last resync planned (undefined: everything). */
  planned: Set<string> | undefined;

  /** After a plan: the attempts it planned (`planned`: these; undefined: every spec) are quiet, or not, from now on. */
  note(plan: Plan, planned: Iterable<string> | undefined, load: LoadResult, statuses: ReadonlyMap<string, AttemptStatus>, snapshot: Snapshot): void {
    const acted = new Set(plan.actions.map((a) => a.attempt));
    const byName = specIndex(load.specs).byName;
    const names = planned ?? load.specs.map((s) => s.spec.name);
    for (const n of names) {
      const spec = byName.get(n);
      const rec = statuses.get(n);
      const quiet =
        spec !== undefined &&
        rec !== undefined &&
        !acted.has(n) &&
        plan.unchanged.get(n) === rec.phase &&
        FINISHED_PHASES.has(rec.phase) &&
        !snapshot.attempts.has(n) &&
        spec.spec.grade === null &&
        !spec.set?.set.score &&
        !spec.held &&
        rec.rerunRequested === undefined &&
        rec.regradeRequested === undefined;
      if (quiet) this.quiet.set(n, { spec, rec });
      else this.quiet.delete(n);
    }
  }

  /**
   * What a resync plans: every name the load, the records and the engine know, but the quiet
   * ones whose spec, record and engine state are those they were planned from; undefined: all.
   */
  toPlan(load: LoadResult, statuses: ReadonlyMap<string, AttemptStatus>, snapshot: Snapshot): Set<string> | undefined {
    this.skipped = 0;
    this.planned = undefined;
    if (this.quiet.size === 0) return undefined;
    const only = new Set<string>();
    for (const s of load.specs) {
      const n = s.spec.name;
      const q = this.quiet.get(n);
      if (q && q.spec === s && statuses.get(n) === q.rec && !snapshot.attempts.has(n)) this.skipped++;
      else only.add(n);
    }
    if (this.skipped === 0) return undefined;
    const desired = specIndex(load.specs).byName;
    for (const n of statuses.keys()) if (!desired.has(n)) only.add(n);
    for (const n of snapshot.attempts.keys()) if (!desired.has(n)) only.add(n);
    for (const n of load.protectedNames) only.add(n);
    this.planned = only;
    return only;
  }
}
