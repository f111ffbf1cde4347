/**
 * The controller's puller (puller.ts), made from its options: one when the pass configuration
 * asks for pulls and the backend can pull. Its state feeds the plans (the configuration's
 * `pull.states`), and in a finite run (`--once --wait`) failed pulls settle after --pull-retries.
 */
import type { Engine } from '../engine/types';
import { RegistryCredentials } from '../registry/credentials';
import type { Clock } from '../util/clock';
import type { ControllerOptions } from './options';
import { Puller, pullsFile } from './puller';

/** The registry credentials of a controller (`--registry-config`, else where the docker CLI finds them); none when it pulls nothing. */
export function controllerCredentials(o: ControllerOptions): RegistryCredentials | undefined {
  const p = o.cfg.pull;
  return p ? new RegistryCredentials({ file: p.registryConfig, env: o.cfg.env }) : undefined;
}

export function controllerPuller(
  o: ControllerOptions,
  engine: Engine,
  clock: Clock,
  onSettled: (names: string[]) => void,
  credentials = controllerCredentials(o),
  starts?: { readonly starting: number },
): Puller | undefined {
  const p = o.cfg.pull;
  if (!p || !engine.images.pull || !credentials) return undefined;
  // a backend whose nodes pull for themselves (a swarm) uses the same credentials
  engine.useCredentials?.((ref) => credentials.forImage(ref));
  const puller = new Puller({
    engine,
    credentials,
    maxPulls: p.maxPulls,
    clock,
    log: o.log,
    stateFile: pullsFile(o.cfg.stateDir, o.cfg.instance),
    onSettled,
    ...(starts ? { starting: () => starts.starting } : {}),
  });
  // the plans read what it knows (PassConfig.pull.states); a finite run settles failed pulls
  o.cfg.pull = { ...p, states: () => puller.view(), ...(o.finite ? { finite: true } : {}) };
  return puller;
}
