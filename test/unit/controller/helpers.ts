/** What the controller's unit tests share: the pass configuration they run with on the fake engine. */
import path from 'node:path';
import type { PassConfig } from '../../../src/controller/pass';
import { DesiredStates } from '../../../src/plan/desired-for';
import type { Clock } from '../../../src/util/clock';
import { silentLogger } from '../../../src/util/log';

/** A configuration over `dir`'s specs/, state/ and results/ (`specsDir`, `stateDir` instead where given), attests hourly. */
export function fakeCfg(o: { dir: string; instance: string; clock: Clock; maxRunning?: number; specsDir?: string; stateDir?: string }): PassConfig {
  const maxRunning = o.maxRunning ?? 4;
  return {
    specsDir: o.specsDir ?? path.join(o.dir, 'specs'),
    stateDir: o.stateDir ?? path.join(o.dir, 'state'),
    resultsRoot: path.join(o.dir, 'results'),
    instance: o.instance,
    maxRunning,
    concurrency: maxRunning,
    attestIntervalMs: 3_600_000,
    policy: {},
    env: {},
    log: silentLogger(),
    now: () => o.clock.now(),
    desired: new DesiredStates(),
  };
}
