/**
 * An exec into a running attempt (`berth exec`, the API's POST .../exec): recorded before it
 * starts and when it ends (record.ts), run as the attempt's user (the container's own, unless
 * the caller names another working folder or adds variables), its output streamed to the
 * caller redacted of the run's secrets as `berth logs` redacts a live log, never held whole.
 *
 * Past its timeout, or when its caller goes away (`signal`: a closed connection, Ctrl-C), it is
 * killed in the container, not only abandoned: every exec carries EXEC.idEnv=<id> in its
 * environment (its children inherit it), and berth's helper (native/berth-helper.c, copied in
 * when it is not there yet) kills each process holding it. Where the helper cannot be copied in
 * (a read-only root filesystem) the exec is given up, and the record and the answer say it was
 * not killed.
 */
import { randomBytes } from 'node:crypto';
import { Readable, type Writable } from 'node:stream';
import { EXEC } from '../constants';
import { describeEngineError } from '../engine/errors';
import type { ExecSession, Reached } from '../engine/types';
import { helperArch, helperTar } from '../pack/helper';
import type { Redactor } from '../util/redact';
import { appendLine, type EndLine } from './record';
import { enter, type Refusal, type Target } from './target';

export interface ExecInput {
  cmd: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Killed past this (ms); none: it runs until it ends or its caller goes. */
  timeoutMs?: number;
  tty?: boolean;
  /** Its standard input (none: not attached). */
  input?: Buffer | Readable;
  by: 'cli' | 'api';
}

export interface ExecResult {
  exitCode: number;
  timedOut: boolean;
  /** When it had to be killed (timeout, caller gone): whether berth's helper killed it in the container. */
  killed?: boolean;
  /** Why it could not be killed, in words. */
  killError?: string;
  durationMs: number;
}

export interface ExecHooks {
  /** The caller went away: killed in the container. */
  signal?: AbortSignal;
  /** The session once started (a terminal's resize). */
  started?(s: ExecSession): void;
}

/** The start of a stream kept for the record: at most `max` bytes, and whether there was more. */
class Head {
  private readonly chunks: Buffer[] = [];
  private n = 0;
  cut = false;
  constructor(private readonly max: number) {}
  add(b: Buffer): void {
    const room = this.max - this.n;
    if (b.length > room) this.cut = true;
    if (room <= 0) return;
    const part = b.length > room ? b.subarray(0, room) : b;
    this.chunks.push(part);
    this.n += part.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/** `from`, redacted, into `to` (left open) and the record's head; resolves at its end. */
function relay(from: Readable, to: Writable, head: Head, redactor: Redactor): Promise<void> {
  const src = redactor.empty ? from : from.pipe(redactor.stream());
  if (src !== from) from.on('error', (err) => src.destroy(err));
  return new Promise<void>((resolve) => {
    src.on('data', (c: Buffer) => {
      head.add(c);
      if (!to.write(c)) {
        src.pause();
        to.once('drain', () => src.resume());
      }
    });
    src.once('end', () => resolve());
    src.once('error', () => resolve());
    src.once('close', () => resolve());
  });
}

export async function execInto(t: Target, x: ExecInput, out: { stdout: Writable; stderr: Writable }, hooks: ExecHooks = {}): Promise<ExecResult | Refusal> {
  const id = randomBytes(8).toString('hex');
  const began = Date.now();
  const reached = await enter(t, {
    id,
    at: new Date(began).toISOString(),
    event: 'begin',
    kind: 'exec',
    by: x.by,
    cmd: x.cmd,
    ...(x.cwd !== undefined ? { cwd: x.cwd } : {}),
    ...(x.tty ? { tty: true } : {}),
    ...(x.timeoutMs !== undefined ? { timeoutSeconds: x.timeoutMs / 1000 } : {}),
  });
  if ('refused' in reached) return reached;
  const { redactor } = t.redaction;
  const heads = { stdout: new Head(EXEC.recordOutputBytes), stderr: new Head(EXEC.recordOutputBytes) };
  let timedOut = false;
  let kill: Promise<{ killed: boolean; error?: string }> | undefined;
  let result: { exitCode: number } | { error: string };
  try {
    const env = [...Object.entries(x.env ?? {}).map(([k, v]) => `${k}=${v}`), `${EXEC.idEnv}=${id}`];
    const s = await reached.engine.containers.execStart(reached.id, {
      cmd: x.cmd,
      env,
      ...(x.cwd !== undefined ? { workingDir: x.cwd } : {}),
      ...(x.tty ? { tty: true } : {}),
      ...(x.input !== undefined ? { stdin: true } : {}),
    });
    hooks.started?.(s);
    if (x.input !== undefined && s.stdin) {
      const stdin = s.stdin;
      stdin.on('error', () => undefined);
      if (Buffer.isBuffer(x.input)) stdin.end(x.input);
      else x.input.pipe(stdin);
    }
    let giveUp: NodeJS.Timeout | undefined;
    let onGiveUp: (v: 'given-up') => void = () => undefined;
    const givenUp = new Promise<'given-up'>((resolve) => (onGiveUp = resolve));
    const killNow = () => {
      if (kill) return;
      kill = killIn(reached, id);
      // a command that was killed ends its output; one that could not be is given up after the kill's time
      void kill.then(() => (giveUp = setTimeout(() => onGiveUp('given-up'), EXEC.killMs).unref()));
    };
    const timer = x.timeoutMs !== undefined ? setTimeout(() => ((timedOut = true), killNow()), x.timeoutMs) : undefined;
    const onAbort = () => killNow();
    hooks.signal?.addEventListener('abort', onAbort, { once: true });
    if (hooks.signal?.aborted) killNow();
    try {
      const flowed = Promise.all([relay(s.stdout, out.stdout, heads.stdout, redactor), relay(s.stderr, out.stderr, heads.stderr, redactor)]);
      const ended = await Promise.race([flowed.then(() => 'ended' as const), givenUp]);
      if (ended === 'given-up') {
        s.close();
        result = { exitCode: -1 };
      } else result = { exitCode: await s.exit };
    } finally {
      clearTimeout(timer);
      clearTimeout(giveUp);
      hooks.signal?.removeEventListener('abort', onAbort);
    }
  } catch (err) {
    result = { error: describeEngineError(err) };
  }
  const k = kill ? await kill : undefined;
  const exitCode = 'error' in result ? 1 : timedOut ? EXEC.timedOutExit : result.exitCode;
  const durationMs = Date.now() - began;
  const notKept = t.redaction.redaction && !t.redaction.redaction.complete ? 'a secret of the run could not be read to redact it' : undefined;
  const end: EndLine = {
    id,
    at: new Date().toISOString(),
    event: 'end',
    kind: 'exec',
    exitCode,
    durationMs,
    ...(timedOut ? { timedOut: true as const } : {}),
    ...(k ? { killed: k.killed } : {}),
    ...(notKept
      ? { outputNotKept: notKept }
      : { stdout: heads.stdout.text(), stderr: heads.stderr.text(), ...(heads.stdout.cut || heads.stderr.cut ? { outputCut: true as const } : {}) }),
    ...('error' in result ? { error: result.error } : {}),
    ...(k?.error ? { error: k.error } : {}),
  };
  await appendLine(t.where, redactor.redactJson(end));
  if ('error' in result) throw new Error(result.error);
  return { exitCode, timedOut, ...(k ? { killed: k.killed } : {}), ...(k?.error ? { killError: k.error } : {}), durationMs };
}

/** Kills exec `id` in the container: berth's helper, copied in first when it is not there. */
async function killIn(reached: Reached, id: string): Promise<{ killed: boolean; error?: string }> {
  const c = reached.engine.containers;
  const cmd = [EXEC.helperPath, 'kill', `${EXEC.idEnv}=${id}`];
  const tryKill = () => c.exec(reached.id, cmd, EXEC.killMs).catch(() => -1);
  // a sandbox has it from its start; any other container from its first kill
  if ((await tryKill()) === 0) return { killed: true };
  try {
    const arch = helperArch((await reached.engine.version()).arch ?? '');
    if (!arch) return { killed: false, error: "berth's helper has no build for the engine's machine: the command was given up, not killed" };
    await c.putArchive(reached.id, '/', await helperTar(arch));
  } catch (err) {
    return {
      killed: false,
      error: `berth's helper could not be copied into the container (${describeEngineError(err)}; a read-only root filesystem takes none): the command was given up, not killed`,
    };
  }
  const code = await tryKill();
  return code === 0 ? { killed: true } : { killed: false, error: `berth's helper could not kill it (exit ${code}): the command was given up` };
}

/** Bytes as a stream (an exec's input from a string or a file). */
export function inputOf(b: Buffer): Readable {
  return Readable.from([b]);
}
