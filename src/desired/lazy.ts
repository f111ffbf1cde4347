/**
 * A DesiredAttempt built on first use. The planner looks at every attempt of a pass, but most of
 * a big folder needs no resources described: finished attempts, and an AttemptSet's children that
 * wait for a slot, use only the name, hash, run and spec. Those four are given, and the containers'
 * names and secret holders (namesOf: what a finished run is compared by) come from desiredNames()
 * without the build; anything else builds the whole desired state once (the same value
 * desiredAttempt() returns) and answers from it.
 */
import type { LoadedSpec } from '../spec/types';
import type { DesiredAttempt, DesiredNames } from './types';

/** How a LazyDesired is built: one for every spec of a plan's input (no closures per attempt: a pass may hold 100,000). */
export interface DesiredMaker {
  full(loaded: LoadedSpec, run: number): DesiredAttempt;
  names(loaded: LoadedSpec): DesiredNames;
}

export class LazyDesired implements DesiredAttempt {
  private built: DesiredAttempt | undefined;
  private namesMemo: DesiredNames | undefined;

  constructor(
    readonly name: string,
    readonly hash: string,
    readonly run: number,
    readonly loaded: LoadedSpec,
    private readonly maker: DesiredMaker,
  ) {}

  /** Whether the whole desired state was built (for tests: what a pass needed). */
  get isBuilt(): boolean {
    return this.built !== undefined;
  }

  /** The containers' names and secret holders, without building the rest (see namesOf). */
  get names(): DesiredNames {
    return (this.namesMemo ??= this.built ? namesFromFull(this.built) : this.maker.names(this.loaded));
  }

  private get full(): DesiredAttempt {
    return (this.built ??= this.maker.full(this.loaded, this.run));
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
  get deadline(): DesiredAttempt['deadline'] {
    return this.full.deadline;
  }
  get disk(): DesiredAttempt['disk'] {
    return this.full.disk;
  }

  /** The built value, as a plain object (logs, JSON). */
  toJSON(): DesiredAttempt {
    return this.full;
  }
}

function namesFromFull(d: DesiredAttempt): DesiredNames {
  return { container: d.container.name, sidecars: d.sidecars, mainSecrets: d.mainSecrets };
}

/**
 * The containers' names and secret holders of a desired state: read without building a lazy one
 * (the same values as its container.name, sidecars and mainSecrets once built).
 */
export function namesOf(d: DesiredAttempt): DesiredNames {
  return d instanceof LazyDesired ? d.names : namesFromFull(d);
}
