/**
 * desiredAttempt: a pure function from a loaded, normalized spec (and the run number and
 * results folder the status record assigns) to the resources the attempt needs, with
 * deterministic names and berth's labels. Secure defaults live here, in one place.
 */
import path from 'node:path';
import {
  COMPONENTS,
  containerName,
  DEFAULTS,
  LABELS,
  networkName,
  volumeName,
  type Component,
} from '../constants';
import type { Labels } from '../engine/types';
import type { LoadedSpec } from '../spec/types';
import type { DesiredAttempt } from './types';

export interface DesiredContext {
  instance: string;
}

export function attemptLabels(instance: string, loaded: LoadedSpec, run: number): Labels {
  return {
    [LABELS.managed]: 'true',
    [LABELS.instance]: instance,
    [LABELS.attempt]: loaded.spec.name,
    [LABELS.specHash]: loaded.hash,
    [LABELS.run]: String(run),
    [LABELS.source]: loaded.relFile,
  };
}

export function withComponent(labels: Labels, component: Component): Labels {
  return { ...labels, [LABELS.component]: component };
}

/** The engine's NetworkMode for an attempt's main container. */
export function networkModeFor(instance: string, loaded: LoadedSpec): string {
  switch (loaded.spec.network.mode) {
    case 'none':
      return 'none';
    case 'bridge':
      return 'bridge';
    case 'isolated':
      return networkName(instance, loaded.spec.name);
  }
}

/**
 * @param resultsDir absolute host folder for this run's results (created by the executor).
 * @param secretEnv values of secrets explicitly opted into the environment (VAR=value);
 *        empty when planning, filled by the executor just before create.
 */
export function desiredAttempt(
  ctx: DesiredContext,
  loaded: LoadedSpec,
  run: number,
  resultsDir: string,
  secretEnv: string[] = [],
): DesiredAttempt {
  const s = loaded.spec;
  const labels = attemptLabels(ctx.instance, loaded, run);
  const netMode = networkModeFor(ctx.instance, loaded);
  const volumes = s.volumes.map((v) => ({
    name: volumeName(ctx.instance, s.name, v.name),
    labels: { ...withComponent(labels, COMPONENTS.volume), [LABELS.volume]: v.name },
  }));
  const env = Object.entries(s.env)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);
  return {
    name: s.name,
    hash: loaded.hash,
    run,
    loaded,
    labels,
    resultsDir: path.resolve(resultsDir),
    expectedNetworks: [netMode],
    network:
      s.network.mode === 'isolated'
        ? { name: networkName(ctx.instance, s.name), labels: withComponent(labels, COMPONENTS.network), internal: true }
        : null,
    volumes,
    container: {
      name: containerName(ctx.instance, s.name),
      create: {
        name: containerName(ctx.instance, s.name),
        image: s.image,
        cmd: s.command,
        env: [...env, ...secretEnv],
        workingDir: s.workingDir,
        labels: withComponent(labels, COMPONENTS.main),
        stopTimeout: DEFAULTS.stopGraceSeconds,
        host: {
          networkMode: netMode,
          binds: [`${path.resolve(resultsDir)}:${DEFAULTS.resultsMount}:rw`],
          mounts: s.volumes.map((v) => ({
            type: 'volume' as const,
            source: volumeName(ctx.instance, s.name, v.name),
            target: v.mountPath,
            readOnly: v.readOnly,
          })),
          capDrop: ['ALL'],
          capAdd: [],
          securityOpt: ['no-new-privileges'],
          privileged: false,
          init: true,
          cgroupnsMode: 'private',
          ...(s.resources.cpus !== null ? { nanoCpus: Math.round(s.resources.cpus * 1e9) } : {}),
          // memory with no extra swap: MemorySwap equal to Memory
          ...(s.resources.memoryBytes !== null
            ? { memory: s.resources.memoryBytes, memorySwap: s.resources.memoryBytes }
            : {}),
          pidsLimit: s.resources.pids,
          readonlyRootfs: false,
        },
      },
    },
  };
}
