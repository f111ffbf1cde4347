/**
 * A short command ends as soon as it is done (start-up, issue 55). After its last line, Node would
 * still run what V8 asked to do when the process is idle (a scavenge of the young generation that
 * a command of a few thousand objects asks for just before its end) and take the heap down page by
 * page: ~1 ms of CPU a short command spends for nothing. Once the command's promise has settled,
 * this ends the process with process.exit, which runs the 'exit' listeners (the launcher's code
 * cache among them), but only when nothing else is left to do:
 * - nothing in the event loop (no handle, request, timer or immediate: Node would end here too);
 * - no 'beforeExit' listener (process.exit does not emit it) and no 'unhandledRejection' one;
 * - every rejection still unhandled at that point handled as Node would: Node looks at them only
 *   after the last callbacks, so a probe, a promise of its own rejected last, is what tells that
 *   Node has looked at all of them. A listener on 'unhandledRejection' sees them in order: any other
 *   is thrown again, an uncaught exception as Node's default makes of it (its message, exit 1),
 *   and the probe, last, ends the process.
 */

/** What exitWhenDone takes of the process (the real one, or a test's). */
export interface ExitingProcess {
  getActiveResourcesInfo(): string[];
  listenerCount(event: 'beforeExit' | 'unhandledRejection'): number;
  on(event: 'unhandledRejection', listener: (reason: unknown) => void): unknown;
  exit(code: number): never;
}

export function exitWhenDone(code: number, proc: ExitingProcess = process): void {
  if (proc.listenerCount('beforeExit') > 0 || proc.listenerCount('unhandledRejection') > 0) return;
  const probe = new Error('berth: the exit probe');
  proc.on('unhandledRejection', (reason) => {
    if (reason !== probe) throw reason;
    if (proc.getActiveResourcesInfo().length === 0) proc.exit(code);
  });
  void Promise.reject(probe);
}
