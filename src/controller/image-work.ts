/**
 * The controller's image work, beside its loop: the pulls (puller.ts) and builds (builder.ts) the
 * plans ask for, and image GC after full passes (image-gc-hook.ts). Each is there only when the
 * backend can do it. An attempt whose image's pull or build ended is looked at again, and, after
 * a pull, so are those waiting their turn.
 */
import type { Engine } from '../engine/types';
import type { Plan } from '../plan/types';
import type { LoadedSpec } from '../spec/types';
import type { AttemptStatus } from '../status/types';
import type { Clock } from '../util/clock';
import { controllerBuilder } from './build-hook';
import type { Builder } from './builder';
import { ImageCollector } from './image-gc-hook';
import type { ControllerOptions } from './options';
import type { Reservations } from './reservations';
import { controllerCredentials, controllerPuller } from './pull-hook';
import type { Puller } from './puller';

export class ImageWork {
  /** Runs the pulls the plans ask for; none when the backend cannot pull. */
  readonly puller: Puller | undefined;
  /** Runs the builds the plans ask for; none when the backend cannot build. */
  readonly builder: Builder | undefined;
  /** Image GC after full passes; none without its configuration or a backend whose disk berth reads. */
  readonly gc: ImageCollector | undefined;

  constructor(
    o: ControllerOptions,
    engine: Engine,
    clock: Clock,
    queue: { add(name: string): void },
    /** Every attempt waiting for a slot is looked at again (a pull ended: one may go now). */
    lookForSlots: () => void,
    starts: Reservations | undefined,
    /** A pull or build ended: the engine's images changed (the next batch lists them). */
    imagesChanged: () => void,
  ) {
    // one set of credentials: the puller's (a build's FROM images are pulled by it) and the builder's (X-Registry-Config)
    const credentials = controllerCredentials(o);
    this.puller = controllerPuller(
      o,
      engine,
      clock,
      (names) => {
        imagesChanged();
        for (const n of names) queue.add(n);
        lookForSlots();
      },
      credentials,
      starts,
    );
    // a prefetch waits for the runs being started (puller.ts): one ended, it may begin
    starts?.onRelease(() => this.puller?.pump());
    this.builder = controllerBuilder(
      o,
      engine,
      clock,
      (names) => {
        imagesChanged();
        for (const n of names) queue.add(n);
      },
      credentials,
    );
    this.gc = ImageCollector.for(o, engine, clock);
  }

  /** A batch's plan: the pulls and builds it asks for; after a full pass (`all`), a round of image GC when one is due. */
  planned(p: Plan, all: boolean, specs: readonly LoadedSpec[], statuses: ReadonlyMap<string, AttemptStatus>): void {
    this.puller?.want(p.pulls ?? []);
    this.builder?.want(p.builds ?? []);
    if (all) this.gc?.after(specs, statuses);
  }

  async close(): Promise<void> {
    await this.puller?.close();
    await this.builder?.close();
    await this.gc?.close();
  }
}
