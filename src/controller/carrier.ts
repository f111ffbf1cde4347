/**
 * Request carrying: a request of `rerun`, `delete` or `regrade` (request-watch.ts) is carried
 * out by the controller that holds the instance. The attempts' actions under way end first and
 * none begins meanwhile (they are held), then their records are marked as the command would mark
 * them (marks.ts), and the answer waits for the batch after the marks and the actions it
 * dispatched for them: it tells what was carried out.
 */
import { REASONS } from '../constants';
import type { LoadReport } from '../spec/loader';
import type { ControllerRequest, RequestAnswer, RequestResult } from '../status/requests';
import type { StatusStore } from '../status/store';
import type { Clock } from '../util/clock';
import { MARKS } from './marks';

export interface CarrierOptions {
  store: StatusStore;
  instance: string;
  clock: Clock;
  /** The actions under way, by attempt. */
  inflight: ReadonlyMap<string, Promise<void>>;
  /** The number of the last batch begun. */
  passes(): number;
  /** The specs as the controller holds them. */
  specs(): Promise<LoadReport>;
  /** Look at attempt `name` (queue it). */
  queue(name: string): void;
  stopping(): boolean;
}

export class RequestCarrier {
  /**
   * Attempts a request marks: no batch numbered up to this (Infinity while marking) dispatches
   * an action for them, as it planned from their records before the mark.
   */
  private readonly held = new Map<string, number>();
  /** Requests waiting for an attempt's action: each settles with the first batch numbered above `after`. */
  private readonly carrying = new Map<string, Array<{ after: number; done: (r: RequestResult) => void }>>();

  constructor(private readonly o: CarrierOptions) {}

  /** Whether batch `batchNo` must not dispatch an action for `name` (a request marks it, or marked it after the batch's records were read). */
  holds(name: string, batchNo: number): boolean {
    const till = this.held.get(name);
    if (till === undefined) return false;
    if (batchNo > till) {
      this.held.delete(name);
      return false;
    }
    return true;
  }

  /** The attempts requests wait for. */
  waitingFor(): string[] {
    return [...this.carrying.keys()];
  }

  async carryOut(req: ControllerRequest): Promise<RequestAnswer> {
    const names = [...new Set(req.names)];
    const results = new Map<string, RequestResult>();
    const waits: Promise<RequestResult>[] = [];
    for (const n of names) this.held.set(n, Infinity);
    try {
      for (;;) {
        const under = names.map((n) => this.o.inflight.get(n)).filter((w) => w !== undefined);
        if (!under.length) break;
        await Promise.allSettled(under);
      }
      const load = await this.o.specs();
      const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
      const at = new Date(this.o.clock.now()).toISOString();
      for (const name of names) {
        const rec = await this.o.store.get(name);
        const invalid = load.protectedNames.has(name) || rec?.reason === REASONS.invalidSpec || rec?.reason === REASONS.duplicateName;
        const m = MARKS[req.command]({
          name,
          rec,
          spec: specs.get(name),
          invalid,
          instance: this.o.instance,
          at,
          ...(req.exitCode !== undefined ? { exitCode: req.exitCode } : {}),
        });
        if (m && 'refused' in m) {
          results.set(name, { name, refused: m.refused });
          continue;
        }
        if (m) await this.o.store.put(m);
        const after = this.o.passes();
        waits.push(
          new Promise<RequestResult>((done) => this.carrying.set(name, [...(this.carrying.get(name) ?? []), { after, done }])).then((r) => {
            results.set(name, r);
            return r;
          }),
        );
      }
    } finally {
      for (const n of names) this.held.set(n, this.o.passes());
    }
    if (this.o.stopping()) this.settleAll(Infinity, 'the controller is stopping');
    for (const n of names) this.o.queue(n);
    await Promise.all(waits);
    return { id: req.id, results: names.map((n) => results.get(n) ?? { name: n, error: 'not carried out' }) };
  }

  /** Settles the requests waiting for `name` that were made before batch `batchNo`. */
  settle(name: string, batchNo: number, r: RequestResult): void {
    const list = this.carrying.get(name);
    if (!list) return;
    const left = list.filter((w) => w.after >= batchNo);
    for (const w of list) if (w.after < batchNo) w.done(r);
    if (left.length) this.carrying.set(name, left);
    else this.carrying.delete(name);
  }

  /** Settles every request made before batch `batchNo` with `error`. */
  settleAll(batchNo: number, error: string): void {
    for (const n of this.waitingFor()) this.settle(n, batchNo, { name: n, error });
  }
}
