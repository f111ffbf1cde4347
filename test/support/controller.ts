/** Runs berth's controller in-process for a sandbox, stoppable by an AbortSignal. */
import { runController } from '../../src/cli/commands/controller';
import type { ReconcileOptions } from '../../src/cli/commands/reconcile';
import { makeContext } from '../../src/cli/context';
import { bufferIo } from '../../src/cli/io';
import type { Engine } from '../../src/engine/types';
import { silentLogger, type Logger } from '../../src/util/log';
import type { Sandbox } from './sandbox';

export interface RunningController {
  stop(): Promise<number>;
  done: Promise<number>;
  io: ReturnType<typeof bufferIo>;
}

export function startController(sb: Sandbox, o: ReconcileOptions = {}, engine?: Engine, log?: Logger): RunningController {
  const abort = new AbortController();
  const io = bufferIo();
  const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, io, {
    engine: engine ?? sb.engine,
    log: log ?? silentLogger(),
  });
  const done = runController(ctx, { resync: 30, ...o }, abort.signal);
  return {
    io,
    done,
    stop: async () => {
      abort.abort();
      return done;
    },
  };
}
