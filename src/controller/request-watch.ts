/**
 * The requests folder of a running controller (status/requests.ts): watched (inotify, through
 * fs.watch) and looked at again at every resync, in case the watch missed one. Each request
 * taken is handed to `carry` and answered with what it says, one at a time per request and
 * several requests at once.
 */
import { watch, type FSWatcher, promises as fs } from 'node:fs';
import { answerRequest, requestsDir, sweepRequests, takeRequests, type ControllerRequest, type RequestAnswer } from '../status/requests';
import type { Logger } from '../util/log';

/** Answers nobody read, and requests taken by a controller that is gone, go after this long. */
const SWEEP_AFTER_MS = 60 * 60 * 1000;

export class RequestWatch {
  private watcher: FSWatcher | undefined;
  private scanning: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private readonly under = new Set<Promise<void>>();

  constructor(
    private readonly o: { stateDir: string; instance: string; log: Logger },
    private readonly carry: (req: ControllerRequest) => Promise<RequestAnswer>,
  ) {}

  async start(): Promise<void> {
    const dir = requestsDir(this.o.stateDir, this.o.instance);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    await sweepRequests(this.o.stateDir, this.o.instance, SWEEP_AFTER_MS).catch(() => undefined);
    try {
      this.watcher = watch(dir, () => this.look());
      this.watcher.on('error', (err) => this.o.log.warn(`requests folder ${dir}: ${err.message}; looked at every resync`));
    } catch (err) {
      this.o.log.warn(`requests folder ${dir} cannot be watched (${(err as Error).message}); looked at every resync`);
    }
    this.look();
  }

  /** Takes and carries out what waits (at most one look at a time; a look asked for meanwhile comes after). */
  look(): void {
    if (this.closed) return;
    if (this.scanning) {
      this.again = true;
      return;
    }
    this.scanning = this.scan()
      .catch((err: unknown) => {
        this.o.log.warn(`requests: ${(err as Error).message}`);
      })
      .finally(() => {
        this.scanning = undefined;
        if (this.again) {
          this.again = false;
          this.look();
        }
      });
  }

  private async scan(): Promise<void> {
    for (const t of await takeRequests(this.o.stateDir, this.o.instance)) {
      if ('refused' in t) {
        this.o.log.warn(t.refused);
        await answerRequest(this.o.stateDir, this.o.instance, { id: t.id, refused: t.refused, results: [] });
        continue;
      }
      const req = t.request;
      this.o.log.info(`${req.command} of ${req.names.join(', ')} asked by ${req.by.user} (pid ${req.by.pid} on ${req.by.hostname})`);
      const work = this.carry(req)
        .catch((err: unknown): RequestAnswer => ({ id: req.id, refused: `the controller failed to carry it out: ${(err as Error).message}`, results: [] }))
        .then((answer) => answerRequest(this.o.stateDir, this.o.instance, answer))
        .catch((err: unknown) => {
          this.o.log.warn(`request ${req.id}: the answer could not be written: ${(err as Error).message}`);
        });
      this.under.add(work);
      void work.finally(() => this.under.delete(work));
    }
  }

  /** Stops watching; the requests under way are answered first. */
  async close(): Promise<void> {
    this.closed = true;
    this.watcher?.close();
    await this.scanning;
    await Promise.allSettled([...this.under]);
  }
}
