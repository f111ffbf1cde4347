/**
 * Ctrl-C and SIGTERM while a finite writer (`reconcile --once [--wait]`) holds the instance's
 * locks, as Terraform handles them: the first one says what berth does, ends the wait, lets the
 * operations under way finish, releases both locks and exits 130 (SIGINT) or 143 (SIGTERM), the
 * shell's 128 + signal; attempts keep running and the next reconcile picks them up. A second one
 * exits at once (main's handler, index.ts), leaving the locks for the next berth to take over.
 */
import { SIGNAL_EXIT } from '../constants';
import type { Context } from './context';
import { diag } from './diag';

export interface Interrupt {
  /** The exit code once interrupted (130 or 143); undefined before. */
  readonly code: number | undefined;
  /** `fn` runs on the first signal (at once when one came already). */
  onSignal(fn: (code: number) => void): void;
  /** Stops listening; after an interrupt, says that the locks are released (call it after releasing them). */
  dispose(): void;
}

/** Listens for SIGINT and SIGTERM until dispose(). `command` is what to run again, for the message. */
export function watchInterrupts(ctx: Pick<Context, 'io' | 'logFormat' | 'instance'>, command: string): Interrupt {
  let code: number | undefined;
  const waiting: ((code: number) => void)[] = [];
  const on = (signal: 'SIGINT' | 'SIGTERM') => () => {
    if (code !== undefined) return;
    code = SIGNAL_EXIT[signal];
    // The next signal is main's (index.ts): it exits at once.
    stopListening();
    diag(
      ctx,
      'warn',
      `interrupted (${signal}): finishing the operations under way and releasing the locks of instance ${ctx.instance}; attempts keep running (${signal === 'SIGINT' ? 'Ctrl-C' : 'the signal'} again exits at once, leaving the locks)`,
    );
    for (const fn of waiting.splice(0)) fn(code);
  };
  const onInt = on('SIGINT');
  const onTerm = on('SIGTERM');
  const stopListening = () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  let disposed = false;
  return {
    get code() {
      return code;
    },
    onSignal(fn) {
      if (code !== undefined) fn(code);
      else waiting.push(fn);
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      stopListening();
      if (code !== undefined) diag(ctx, 'warn', `interrupted: the locks are released and attempts keep running; run \`${command}\` again to pick them up`);
    },
  };
}
