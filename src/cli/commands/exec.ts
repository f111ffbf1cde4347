/**
 * `berth exec NAME [--timeout DUR] [-w DIR] [-i] [-t] -- CMD [ARG...]`: runs a command in the
 * running main container of the attempt, as the attempt's user, through the engine (on a swarm,
 * the node's), streams its output (redacted of the run's secrets, as `berth logs` redacts a live
 * log) and exits with its exit code; past --timeout the command is killed in the container and
 * berth exits 124. An attempt that is not Running is refused (exit 1, its phase named). Every
 * exec is recorded in the run folder's execs.jsonl, and the run is `touched` (src/touch/).
 * Ctrl-C (without -t) kills the command in the container too.
 */
import type { Readable, Writable } from 'node:stream';
import { EXIT, SIGNAL_EXIT } from '../../constants';
import { describeEngineError, isEngineDown } from '../../engine/errors';
import { execInto } from '../../touch/exec';
import { findTarget } from '../../touch/target';
import { UsageError, type Context } from '../context';
import { diag } from '../diag';

export interface ExecOptions {
  /** --timeout, ms. */
  timeout?: number;
  workdir?: string;
  interactive?: boolean;
  tty?: boolean;
}

export interface ExecStreams {
  stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: Writable & { columns?: number; rows?: number; on?: Writable['on'] };
  stderr: Writable;
}

/** The attempt's name from NAME or attempt/NAME (a set stands for many: no single container). */
export function oneAttempt(arg: string, command: string): string {
  if (arg.startsWith('set/')) throw new UsageError(`${command}: ${arg} is an AttemptSet; name one of its attempts`);
  const name = arg.replace(/^attempt\//, '');
  if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(name)) throw new UsageError(`${command}: ${JSON.stringify(arg)} is not an attempt name`);
  return name;
}

export async function runExec(ctx: Context, nameArg: string, cmd: string[], o: ExecOptions, io?: ExecStreams): Promise<number> {
  const name = oneAttempt(nameArg, 'exec');
  if (!cmd.length) throw new UsageError('exec: a command to run is missing (berth exec NAME -- CMD [ARG...])');
  const streams: ExecStreams = io ?? { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
  const engine = ctx.engine();
  const t = await findTarget({ store: ctx.store(), engine, resultsRoot: ctx.resultsRoot, env: ctx.env, name });
  if ('refused' in t) {
    diag(ctx, 'error', t.refused);
    return EXIT.failed;
  }
  for (const w of t.redaction.warnings) diag(ctx, 'warn', w.replace(/at the harvest: .*$/, 'here: it is not redacted from what this exec prints'));
  const tty = o.tty === true;
  const raw = tty && o.interactive && streams.stdin.isTTY && streams.stdin.setRawMode ? streams.stdin : undefined;
  const ac = new AbortController();
  let signalled: number | undefined;
  const onSignal = (sig: 'SIGINT' | 'SIGTERM') => () => {
    signalled = SIGNAL_EXIT[sig];
    ac.abort(new Error(`interrupted (${sig})`));
  };
  const onInt = onSignal('SIGINT');
  const onTerm = onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  raw?.setRawMode?.(true);
  let resize: (() => void) | undefined;
  try {
    const r = await execInto(
      t,
      {
        cmd,
        by: 'cli',
        ...(o.workdir !== undefined ? { cwd: o.workdir } : {}),
        ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}),
        ...(tty ? { tty: true } : {}),
        ...(o.interactive ? { input: streams.stdin } : {}),
      },
      { stdout: streams.stdout, stderr: streams.stderr },
      {
        signal: ac.signal,
        started: (s) => {
          const out = streams.stdout;
          if (!tty || !out.columns || !out.rows) return;
          resize = () => void s.resize(out.rows ?? 24, out.columns ?? 80).catch(() => undefined);
          resize();
          process.on('SIGWINCH', resize);
        },
      },
    );
    if ('refused' in r) {
      diag(ctx, 'error', r.refused);
      return EXIT.failed;
    }
    if (r.timedOut)
      diag(
        ctx,
        'error',
        `exec in ${name}: past --timeout ${o.timeout !== undefined ? o.timeout / 1000 : '?'}s; ${r.killed ? 'killed in the container' : (r.killError ?? 'not killed')}`,
      );
    else if (r.killed === false && r.killError) diag(ctx, 'error', `exec in ${name}: ${r.killError}`);
    return signalled ?? r.exitCode;
  } catch (err) {
    if (!isEngineDown(err) && !(err instanceof Error)) throw err;
    diag(ctx, 'error', `exec in ${name}: ${describeEngineError(err)}`);
    return EXIT.failed;
  } finally {
    raw?.setRawMode?.(false);
    if (o.interactive) streams.stdin.pause();
    if (resize) process.off('SIGWINCH', resize);
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
}
