/**
 * The executor runs a plan: attempts in parallel (bounded by --concurrency), each attempt's
 * operations in order. It decides nothing: each operation does what its type says
 * (plan/types.ts) and reports what it met as a typed outcome (`done`, `conflict`, `not-found`,
 * `secret-missing`, `not-ready`, `unsafe-path`, ...); any outcome but `done` stops the action,
 * and the planner says what it means (plan/follow-up.ts): the operations that follow, run next.
 * One failing attempt never stops the others. It writes the attempts' status records; besides
 * it, the controller adds only a failed action's `lastError`, and `berth rerun` / `berth delete`
 * their marks.
 *
 * Each operation changes the engine at most once (a create, a connect, a copy, a start, a stop or
 * a remove), so what it met is about that one change; the reads it needs go with it (what holds a
 * name it was refused, the image's user, the engine's boot, an inspect to attest, a harvest's
 * logs). `begin-run`, `record-copied`, `record` and `forget` make no engine call; `attest-start`,
 * `attest`, `adopt`, `ready-sidecar`, `finish` and `harvest` only read.
 * One concern per file: create.ts (begin-run, create-container, copy-in, record-copied),
 * sidecar.ts (create-sidecar, connect-sidecar, copy-in-sidecar, start-sidecar, ready-sidecar),
 * conflict.ts (networks, volumes, names held), start.ts (start, attest-start, adopt), attest.ts,
 * finish.ts (finish, harvest), grade.ts (a grade's five), status-record.ts. What goes into a
 * container is packed in pack/, what comes out is written by harvest/ and workspace/; what an
 * end means is decided in plan/ (exit-outcome.ts, grade-verdict.ts, results-truncated.ts).
 */
import { followUp } from '../plan/follow-up';
import type { AttemptAction, OpOutcome, Operation, Plan } from '../plan/types';
import type { EngineBoot } from '../status/types';
import { runBounded } from '../util/pool';
import { attest } from './attest';
import { createNetwork, createVolume } from './conflict';
import type { ExecContext, ExecutorDeps } from './context';
import { copyIn, createContainer, recordCopied, recordIntent } from './create';
import { finish, harvest } from './finish';
import { beginGrade, copyInGrader, createGrader, finishGrade, startGrader } from './grade';
import { DONE, outcomeOf } from './outcome';
import { sidecarOp } from './sidecar';
import { adopt, attestStart, start } from './start';
import { recordPatch, StatusRecords } from './status-record';

export type { ExecutorDeps } from './context';

export interface ActionResult {
  attempt: string;
  ok: boolean;
  /** Operations of the plan done before the first outcome other than `done` (follow-ups not counted). */
  done: number;
  /** Every operation done, in order: the plan's and their follow-ups. */
  ran: Operation[];
  /** The first outcome other than `done`, if any. */
  outcome?: Exclude<OpOutcome, { type: 'done' }>['type'];
  error?: string;
}

function assertNever(x: never): never {
  throw new Error(`unknown operation ${JSON.stringify(x)}`);
}

export class Executor {
  private readonly x: ExecContext;
  /** The engine's boot as first seen by this executor (one pass): recorded before starts. */
  private boot: Promise<EngineBoot | undefined> | undefined;
  constructor(private readonly deps: ExecutorDeps) {
    const now = deps.now ?? Date.now;
    this.x = { deps, now, records: new StatusRecords(deps.store, deps.instance, now), bootForStart: () => this.bootForStart() };
  }

  private bootForStart(): Promise<EngineBoot | undefined> {
    this.boot ??= this.deps.engine.boot().then(
      (b) => {
        if (!b) this.boot = undefined; // not kept: the next start asks again
        return b;
      },
      () => {
        this.boot = undefined;
        return undefined;
      },
    );
    return this.boot;
  }

  async run(plan: Plan): Promise<ActionResult[]> {
    const actions = plan.actions.filter((a) => a.ops.length > 0);
    const settled = await runBounded(actions, this.deps.concurrency, (a) => this.runAction(a));
    return settled.map((s, i) =>
      s.status === 'fulfilled' ? s.value : { attempt: actions[i]?.attempt ?? '?', ok: false, done: 0, ran: [], error: String(s.reason) },
    );
  }

  async runAction(a: AttemptAction): Promise<ActionResult> {
    const log = this.deps.log.child({ attempt: a.attempt });
    let ops = a.ops;
    let planned = true;
    let done = 0;
    const ran: Operation[] = [];
    let rounds = 0;
    // containers the action's operations made, by resource: the next operations on it use the id
    const made = new Map<string, string>();
    let result: Pick<ActionResult, 'ok' | 'error' | 'outcome'> = { ok: true };
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as Operation;
      log.debug(`${op.type} ${op.resource}`, { cause: op.cause });
      const out = await this.op(a, op, made.get(op.resource)).catch((err: unknown) => outcomeOf(err));
      if (out.type === 'done') {
        if (out.made !== undefined) made.set(op.resource, out.made);
        if (planned) done++;
        ran.push(op);
        continue;
      }
      const next = followUp(a, op, out, ops.slice(i + 1), this.x.now(), rounds++);
      if (next.ok) log.info(`${op.type} ${op.resource}: ${out.type}; ${next.ops.length ? next.ops.map((o) => o.type).join(', ') : 'nothing'} follows`);
      else log.error(`${op.type} ${op.resource} failed: ${next.error ?? out.type}`);
      result = {
        ok: result.ok && next.ok,
        ...((result.error ?? next.error) ? { error: result.error ?? next.error } : {}),
        outcome: result.outcome ?? out.type,
      };
      ops = next.ops;
      planned = false;
      i = -1;
    }
    return { attempt: a.attempt, done, ran, ...result };
  }

  /** `made`: the id of the container an earlier operation of the action made for `op.resource`. */
  private async op(a: AttemptAction, op: Operation, made: string | undefined): Promise<OpOutcome> {
    const { engine } = this.deps;
    const x = this.x;
    switch (op.type) {
      case 'create-volume':
        return createVolume(x, op.volume);
      case 'create-network':
        return createNetwork(x, op.network);
      case 'begin-run':
        await recordIntent(x, a, op);
        return DONE;
      case 'create-container':
        return createContainer(x, a, op);
      case 'copy-in':
        return copyIn(x, a, op);
      case 'record-copied':
        return recordCopied(x, a, op);
      case 'create-sidecar':
      case 'connect-sidecar':
      case 'copy-in-sidecar':
      case 'start-sidecar':
      case 'ready-sidecar':
        return sidecarOp(x, a, op, made);
      case 'start':
        return start(x, a, op);
      case 'attest-start':
        return attestStart(x, a, op);
      case 'attest':
        return attest(x, a, op);
      case 'adopt':
        return adopt(x, a, op);
      case 'stop':
        await engine.containers.stop(op.id, op.graceSeconds);
        return DONE;
      case 'finish':
        return finish(x, a, op);
      case 'harvest':
        return harvest(x, a, op);
      case 'remove-container':
        await engine.containers.remove(op.id);
        return DONE;
      case 'remove-network':
        await engine.networks.remove(op.id);
        return DONE;
      case 'remove-volume':
        await engine.volumes.remove(op.id);
        return DONE;
      case 'record':
        await recordPatch(x.records, a, op);
        return DONE;
      case 'forget':
        await x.records.remove(a.attempt);
        return DONE;
      case 'begin-grade':
        return beginGrade(x, a, op);
      case 'create-grader':
        return createGrader(x, a, op);
      case 'copy-in-grader':
        return copyInGrader(x, a, op, made);
      case 'start-grader':
        return startGrader(x, a, op, made);
      case 'finish-grade':
        return finishGrade(x, a, op);
      default:
        return assertNever(op);
    }
  }
}
