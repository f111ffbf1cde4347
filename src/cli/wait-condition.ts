/**
 * What `berth wait --for` waits for, and the verdict on a set of attempts (pure). `finished`
 * holds when an attempt is in a final phase (Invalid and Blocked too: they cannot go on without
 * the user) and no retry of it is pending (a run that failed with retries left is not finished
 * yet); `phase=X` holds when its phase is X. An attempt that is finished in another phase than
 * the one waited for can no longer reach it: the wait ends there, with the exit code its outcome
 * gives (3 a task failure, 5 an infrastructure outcome, under `--fail-on`; 1 where that is 0).
 * A run whose harvest failed (HarvestFailed: the record keeps its phase until the harvest is
 * done) ends the wait as it ends `reconcile --wait`: exit 1.
 */
import { EXIT, FAIL_ON, PHASES, REASONS, type FailOn, type Phase } from '../constants';
import { settled as settledFacts } from '../plan/settled';
import { gradeClass, gradePending } from '../sets/grade-state';
import { classify, tally, type Classified, type Judging, type Tally } from '../sets/outcome';
import type { LoadedSpec } from '../spec/types';
import type { AttemptStatus } from '../status/types';
import { UsageError } from './context';

export type WaitFor = { kind: 'finished' } | { kind: 'phase'; phase: Phase };

/** `finished` or `phase=<Phase>`; undefined when `text` is neither. */
export function parseWaitFor(text: string): WaitFor | undefined {
  if (text === 'finished') return { kind: 'finished' };
  const m = /^phase=(.+)$/.exec(text);
  const phase = PHASES.find((p) => p.toLowerCase() === m?.[1]?.toLowerCase());
  return phase ? { kind: 'phase', phase } : undefined;
}

export interface Watched {
  name: string;
  /** Undefined while no record exists (not reconciled yet). */
  status?: Pick<AttemptStatus, 'phase' | 'reason' | 'retriesUsed' | 'infraRetriesUsed' | 'score' | 'scorePass'>;
  /** The spec's `retries` (0 without a valid spec). */
  retries: number;
  /** `--infra-retries`, as this command knows it (default DEFAULTS.infraRetries). */
  infraRetries?: number;
  /** A set's child: how its set judges it (score, task outcomes moved to infrastructure). */
  policy?: Judging;
  /** spec.grade: the finished run's grade is still to come (plan/grade.ts gradePending). */
  gradePending?: boolean;
  /** spec.grade: the class the run's latest grade gives it (sets/grade-state.ts gradeClass); it stands for the run's own outcome. */
  graded?: Classified;
}

/** What `wait` and `reconcile --wait` judge an attempt by: its record, and its spec's retries, set and grade. */
export function watched(name: string, loaded: LoadedSpec | undefined, status: AttemptStatus | undefined, infraRetries?: number): Watched {
  const grade = loaded && status ? gradeClass(loaded, status) : undefined;
  return {
    name,
    retries: loaded?.spec.retries ?? 0,
    ...(infraRetries !== undefined ? { infraRetries } : {}),
    ...(loaded?.set ? { policy: loaded.set.set } : {}),
    ...(status ? { status } : {}),
    ...(loaded && gradePending(loaded, status) ? { gradePending: true } : {}),
    ...(grade && grade.outcome !== 'unfinished' ? { graded: grade } : {}),
  };
}

/** Whether the attempt is settled (plan/settled.ts): a phase it stays in, no retry or grade to come. */
export function settled(w: Watched): boolean {
  return settledFacts(w);
}

/** The outcome an attempt counts as in the end line: its class once settled, unfinished before. */
export function outcomeOf(w: Watched): Classified {
  if (!settled(w) || w.status?.reason === REASONS.harvestFailed) return { outcome: 'unfinished' };
  return w.graded ?? classify(w.status, w.policy, w.retries);
}

/**
 * The exit code outcomes give under `--fail-on` (CONTRACT.md): 5 for an infrastructure outcome
 * (it wins over 3), 3 for a task failure, else 0; with `infra` task failures give 0, with `none`
 * nothing does (berth's own errors are the caller's).
 */
export function outcomeExit(t: Pick<Tally, 'failed' | 'infra'>, failOn: FailOn): number {
  if (failOn === 'none') return EXIT.ok;
  if (t.infra > 0) return EXIT.infraOutcomes;
  if (failOn === 'failed' && t.failed > 0) return EXIT.attemptsFailed;
  return EXIT.ok;
}

/** `--fail-on` (or BERTH_FAIL_ON; default failed); a value it does not know is a usage error. */
export function failOnOf(text: string | undefined): FailOn {
  const f = FAIL_ON.find((x) => x === (text ?? 'failed'));
  if (!f) throw new UsageError(`--fail-on ${JSON.stringify(text)}: use ${FAIL_ON.join(', ')}`);
  return f;
}

export interface Verdict {
  /** The exit code when the wait is over; undefined while it goes on. */
  code?: number;
  /** The attempts that meet the condition. */
  met: string[];
  /** Those that do not (yet). */
  unmet: string[];
}

export function verdict(items: readonly Watched[], want: WaitFor, failOn: FailOn = 'failed'): Verdict {
  const met: string[] = [];
  const unmet: string[] = [];
  let harvestFailed = false;
  let impossible = false;
  const over: Watched[] = [];
  for (const w of items) {
    const phase = w.status?.phase;
    if (want.kind === 'finished') {
      if (settled(w)) met.push(w.name);
      else unmet.push(w.name);
      if (settled(w)) over.push(w);
    } else if (phase === want.phase) {
      met.push(w.name);
    } else {
      unmet.push(w.name);
      if (settled(w)) {
        impossible = true;
        over.push(w);
      }
    }
    if (settled(w) && w.status?.reason === REASONS.harvestFailed) harvestFailed = true;
  }
  if (!impossible && unmet.length) return { met, unmet };
  // A harvest that failed is berth's own error; otherwise the outcomes decide (an attempt that can
  // no longer reach the phase waited for fails the wait even where its outcome would not).
  const code = harvestFailed ? EXIT.failed : outcomeExit(tally(over.map((w) => ({ name: w.name, outcome: outcomeOf(w) }))), failOn);
  return { code: impossible ? code || EXIT.failed : code, met, unmet };
}
