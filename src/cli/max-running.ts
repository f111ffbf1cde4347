import type * as Os from 'node:os';

/** `--max-running`'s default: two attempts per core, at least 2 (a 2-core machine runs 4 at once). */
export function defaultMaxRunning(): number {
  return Math.max(2, (require('node:os') as typeof Os).availableParallelism() * 2);
}
