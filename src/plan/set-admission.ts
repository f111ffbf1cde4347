/**
 * Admission of AttemptSet children, pure (part of the planner): per set, how many of its
 * children run, and whether the set admits no more (failFast after a task failure — a non-zero
 * exit, TimedOut, OOMKilled, ... —, maxFailed infrastructure outcomes reached, as
 * sets/outcome.ts classifies them). Read from the pass's snapshot and the status records of the
 * children's current spec hash, so every pass decides the same way.
 */
import { judge } from '../sets/grade-state';
import { COMPONENTS, LABELS, REASONS } from '../constants';
import type { ObservedAttempt } from '../observe/types';
import type { LoadedSpec, SetPolicy } from '../spec/types';
import type { PlanInput } from './input';

export interface SetState {
  policy: SetPolicy;
  /** Children running now or whose ended run is not yet recorded finished, their graders running, plus those admitted so far in this pass. */
  running: number;
  /** Why the set admits no more children; unset while it does. */
  stop?: { reason: string; message: string };
}

/** The sets of the pass's specs and their admission state. */
export function setStates(inp: PlanInput, runningStates: ReadonlySet<string>): Map<string, SetState> {
  const out = new Map<string, SetState>();
  const failed = new Map<string, string[]>();
  const infra = new Map<string, string[]>();
  for (const loaded of inp.specs) {
    const m = loaded.set;
    if (!m) continue;
    const name = m.set.name;
    let st = out.get(name);
    if (!st) out.set(name, (st = { policy: m.set, running: 0 }));
    const rec = inp.statuses.get(loaded.spec.name);
    // A run whose container has ended holds its place until its finish is recorded: only then is
    // its outcome known (failFast, maxFailed must see it before a sibling takes its place).
    const obs = inp.snapshot.attempts.get(loaded.spec.name);
    if (isRunning(obs, runningStates) || (rec?.phase === 'Running' && rec.specHash === loaded.hash)) st.running++;
    // a grader holds a room of its set, as a run does (CONTRACT.md's berth section, "Graders take slots")
    st.running += graders(obs, runningStates);
    if (!rec || rec.specHash !== loaded.hash) continue;
    // a child whose image is missing never ran: it waits for the image, and counts toward no maxFailed
    if (rec.phase === 'Blocked' && rec.reason === REASONS.imageMissing) continue;
    // spec.grade: the grader's verdict, when one judges the run (sets/grade-state.ts judge)
    const c = judge(loaded, rec);
    // pushed, not copied: a set of 10,000 may hold thousands of failures
    if (c.outcome === 'failed') push(failed, name, loaded.spec.name);
    if (c.outcome === 'infra') push(infra, name, `${loaded.spec.name} (${c.reason ?? 'infra'})`);
  }
  for (const [name, st] of out) {
    st.running += inp.reservedBySet?.get(name) ?? 0;
    const f = failed.get(name) ?? [];
    const i = infra.get(name) ?? [];
    if (st.policy.failFast && f.length > 0) {
      st.stop = { reason: REASONS.failFast, message: `not started: set ${name} has failFast and ${list(f)} failed` };
    } else if (st.policy.maxFailed !== null && i.length >= st.policy.maxFailed) {
      st.stop = {
        reason: REASONS.maxFailedReached,
        message: `not started: set ${name} reached maxFailed ${st.policy.maxFailed} (infrastructure failures: ${list(i)})`,
      };
    }
  }
  return out;
}

function push(m: Map<string, string[]>, k: string, v: string): void {
  const had = m.get(k);
  if (had) had.push(v);
  else m.set(k, [v]);
}

function isRunning(obs: ObservedAttempt | undefined, runningStates: ReadonlySet<string>): boolean {
  return !!obs?.containers.some((c) => c.labels[LABELS.component] === COMPONENTS.main && runningStates.has(c.state));
}

function graders(obs: ObservedAttempt | undefined, runningStates: ReadonlySet<string>): number {
  return obs ? obs.containers.filter((c) => c.labels[LABELS.component] === COMPONENTS.grader && runningStates.has(c.state)).length : 0;
}

function list(names: string[]): string {
  return names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
}

/** Planner order: attempts by name; a set's children at the set's name, in the set's expansion order (its coordinates). */
export function admissionOrder(a: LoadedSpec, b: LoadedSpec): number {
  const ka = a.set ? a.set.set.name : a.spec.name;
  const kb = b.set ? b.set.set.name : b.spec.name;
  if (ka !== kb) return ka < kb ? -1 : 1;
  return (a.set ? a.set.index : -1) - (b.set ? b.set.index : -1);
}
