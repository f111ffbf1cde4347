/**
 * A DesiredAttempt built on first use. The planner looks at every attempt of a pass, but most of
 * a big folder needs no resources described: finished attempts, and an AttemptSet's children that
 * wait for a slot, use only the name, hash, run and spec. Those four are given; anything else
 * builds the whole desired state once (the same value desiredAttempt() returns) and answers from it.
 */
import type { LoadedSpec } from '../spec/types';
import type { DesiredAttempt } from './types';

export class LazyDesired implements DesiredAttempt {
  private built: DesiredAttempt | undefined;

  constructor(
    readonly name: string,
    readonly hash: string,
    readonly run: number,
    readonly loaded: LoadedSpec,
    private readonly build: () => DesiredAttempt,
  ) {}

  private get full(): DesiredAttempt {
    return (this.built ??= this.build());
  }

  get labels(): DesiredAttempt['labels'] {
    return this.full.labels;
  }
  get resultsDir(): string {
    return this.full.resultsDir;
  }
  get container(): DesiredAttempt['container'] {
    return this.full.container;
  }
  get network(): DesiredAttempt['network'] {
    return this.full.network;
  }
  get egressNetwork(): DesiredAttempt['egressNetwork'] {
    return this.full.egressNetwork;
  }
  get sidecars(): DesiredAttempt['sidecars'] {
    return this.full.sidecars;
  }
  get mainSecrets(): string[] {
    return this.full.mainSecrets;
  }
  get volumes(): DesiredAttempt['volumes'] {
    return this.full.volumes;
  }
  get expectedNetworks(): string[] {
    return this.full.expectedNetworks;
  }

  /** The built value, as a plain object (logs, JSON). */
  toJSON(): DesiredAttempt {
    return this.full;
  }
}
