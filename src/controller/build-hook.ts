/**
 * The controller's builder (builder.ts), made from its options: one when the backend can build.
 * Its state feeds the plans (the configuration's `build.state`); a build that ends queues the
 * attempts that asked for it.
 */
import { DEFAULTS } from '../constants';
import type { Engine } from '../engine/types';
import { buildRegistryConfig, type RegistryCredentials } from '../registry/credentials';
import type { Clock } from '../util/clock';
import { Builder } from './builder';
import type { ControllerOptions } from './options';
import { localDataRoot } from './pass';

export function controllerBuilder(
  o: ControllerOptions,
  engine: Engine,
  clock: Clock,
  onSettled: (names: string[]) => void,
  credentials?: RegistryCredentials,
): Builder | undefined {
  if (!engine.builds) return undefined;
  const b = o.cfg.build;
  const builder = new Builder({
    engine,
    stateDir: o.cfg.stateDir,
    instance: o.cfg.instance,
    maxBuilds: b?.maxBuilds ?? DEFAULTS.maxBuilds,
    timeoutMs: b?.timeoutMs ?? DEFAULTS.buildTimeoutMs,
    clock,
    log: o.log,
    ...(o.cfg.disk ? { pressure: o.cfg.disk } : {}),
    ...(engine.local ? { dataRoot: localDataRoot(engine) } : {}),
    ...(credentials ? { registryConfig: (refs: readonly string[]) => buildRegistryConfig(credentials, refs) } : {}),
    onSettled,
  });
  // the plans read what it knows (PassConfig.build.state)
  o.cfg.build = { maxBuilds: builder.maxBuilds, timeoutMs: b?.timeoutMs ?? DEFAULTS.buildTimeoutMs, state: (h) => builder.stateOf(h) };
  return builder;
}
