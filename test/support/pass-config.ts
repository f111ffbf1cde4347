/** The pass configuration tests give a sandbox's folders (Sandbox on the real engine, FakeSandbox on the fake). */
import type { PassConfig } from '../../src/controller/pass';
import { DesiredStates } from '../../src/plan/desired-for';
import { silentLogger } from '../../src/util/log';

/** The pass configuration of a sandbox's folders and instance (Sandbox, FakeSandbox), with `over` on top. */
export function passConfigOf(sb: { specsDir: string; stateDir: string; resultsRoot: string; instance: string }, over: Partial<PassConfig> = {}): PassConfig {
  return {
    specsDir: sb.specsDir,
    stateDir: sb.stateDir,
    resultsRoot: sb.resultsRoot,
    instance: sb.instance,
    maxRunning: 8,
    concurrency: 8,
    attestIntervalMs: 60_000,
    policy: {},
    env: process.env,
    log: silentLogger(),
    desired: new DesiredStates(),
    ...over,
  };
}
