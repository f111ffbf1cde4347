/**
 * Property tests for WorkQueue: random interleavings of add / get / done (and delayed and
 * rate-limited adds on a FakeClock) across several simulated workers. Checked: a key is never
 * held by two workers at once, every add is followed by a hand-out that starts after it (no key
 * is lost), and for plain adds the exact hand-out order matches a reference model of client-go.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { WorkQueue } from '../../../src/controller/queue';
import { FakeClock, settle } from '../../../src/util/clock';

const KEYS = ['a', 'b', 'c', 'd', 'e'];
const WORKERS = 4;

type Op =
  | { op: 'add'; key: string }
  | { op: 'get'; worker: number }
  | { op: 'done'; worker: number }
  | { op: 'addAfter'; key: string; ms: number }
  | { op: 'addRateLimited'; key: string }
  | { op: 'forget'; key: string }
  | { op: 'advance'; ms: number };

const key = fc.constantFrom(...KEYS);
const worker = fc.nat(WORKERS - 1);
const plainOp: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('add' as const), key }),
  fc.record({ op: fc.constant('get' as const), worker }),
  fc.record({ op: fc.constant('done' as const), worker }),
);
const timedOp: fc.Arbitrary<Op> = fc.oneof(
  plainOp,
  fc.record({ op: fc.constant('addAfter' as const), key, ms: fc.integer({ min: -5, max: 500 }) }),
  fc.record({ op: fc.constant('addRateLimited' as const), key }),
  fc.record({ op: fc.constant('forget' as const), key }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 1000 }) }),
);

/** client-go's queue.go, written as plainly as possible, with its waiting workers. */
class ModelQueue {
  queue: string[] = [];
  dirty = new Set<string>();
  processing = new Set<string>();
  waiters: number[] = [];
  handed: [number, string][] = [];

  add(k: string): void {
    if (this.dirty.has(k)) return;
    this.dirty.add(k);
    if (this.processing.has(k)) return;
    this.queue.push(k);
    this.serve();
  }
  get(w: number): void {
    this.waiters.push(w);
    this.serve();
  }
  done(k: string): void {
    this.processing.delete(k);
    if (this.dirty.has(k)) {
      this.queue.push(k);
      this.serve();
    }
  }
  private serve(): void {
    while (this.waiters.length > 0 && this.queue.length > 0) {
      const w = this.waiters.shift() as number;
      const k = this.queue.shift() as string;
      this.dirty.delete(k);
      this.processing.add(k);
      this.handed.push([w, k]);
    }
  }
}

/** Simulated workers on a real WorkQueue, recording every hand-out and checking exclusivity. */
class Harness {
  readonly clock = new FakeClock(0);
  readonly q = new WorkQueue({ clock: this.clock, backoff: { baseMs: 10, maxMs: 400 }, rateLimit: { ratePerSecond: 50, burst: 3 } });
  readonly state: ('idle' | 'waiting' | { key: string })[] = Array.from({ length: WORKERS }, () => 'idle' as const);
  readonly handed: [number, string][] = [];
  /** Logical time: op index. Last request to add each key, last hand-out start of each key. */
  step = 0;
  readonly lastAdd = new Map<string, number>();
  readonly lastStart = new Map<string, number>();
  violation: string | undefined;

  get(w: number): void {
    if (this.state[w] !== 'idle') return;
    this.state[w] = 'waiting';
    void this.q.get().then((k) => {
      if (k === undefined) {
        this.state[w] = 'idle';
        return;
      }
      const holder = this.state.findIndex((s) => typeof s === 'object' && s.key === k);
      if (holder >= 0) this.violation ??= `key ${k} handed to worker ${w} while worker ${holder} holds it`;
      this.state[w] = { key: k };
      this.handed.push([w, k]);
      this.lastStart.set(k, this.step);
    });
  }

  done(w: number): string | undefined {
    const s = this.state[w];
    if (typeof s !== 'object') return undefined;
    this.state[w] = 'idle';
    this.q.done(s.key);
    return s.key;
  }

  async apply(op: Op): Promise<void> {
    this.step++;
    switch (op.op) {
      case 'add':
        this.lastAdd.set(op.key, this.step);
        this.q.add(op.key);
        break;
      case 'addAfter':
        this.lastAdd.set(op.key, this.step);
        this.q.addAfter(op.key, op.ms);
        break;
      case 'addRateLimited':
        this.lastAdd.set(op.key, this.step);
        this.q.addRateLimited(op.key);
        break;
      case 'forget':
        this.q.forget(op.key);
        break;
      case 'advance':
        this.clock.advance(op.ms);
        break;
      case 'get':
        this.get(op.worker);
        break;
      case 'done':
        this.done(op.worker);
        break;
    }
    await settle();
  }

  /** Fires every delayed add and lets the workers work until nothing is left. */
  async drain(): Promise<void> {
    for (let round = 0; round < 1000; round++) {
      this.step++;
      this.clock.advance(1_000_000);
      let moved = false;
      for (let w = 0; w < WORKERS; w++) {
        if (this.done(w) !== undefined) moved = true;
        if (this.state[w] === 'idle') this.get(w);
      }
      await settle();
      const busy = this.state.some((s) => typeof s === 'object');
      if (!moved && !busy && this.q.len() === 0 && this.q.delayedLen() === 0 && this.clock.pendingTimers() === 0) return;
    }
    throw new Error('queue did not drain');
  }

  checkNothingLost(): void {
    for (const [k, added] of this.lastAdd) {
      const started = this.lastStart.get(k);
      // A hand-out stamped with the add's own step was caused by that add (a waiting worker took it).
      expect(started, `key ${k} added at step ${added} was never handed out after that`).to.be.at.least(added);
    }
  }
}

describe('controller/queue (properties)', () => {
  it('plain add/get/done: matches the client-go model exactly and never double-hands a key', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(plainOp, { maxLength: 120 }), async (ops) => {
        const h = new Harness();
        const model = new ModelQueue();
        for (const op of ops) {
          if (op.op === 'add') model.add(op.key);
          if (op.op === 'get' && h.state[op.worker] === 'idle') model.get(op.worker);
          if (op.op === 'done') {
            const s = h.state[op.worker];
            if (typeof s === 'object') model.done(s.key);
          }
          await h.apply(op);
          expect(h.violation).to.equal(undefined);
          expect(h.handed).to.deep.equal(model.handed);
          expect(h.q.len()).to.equal(model.queue.length);
        }
        await h.drain();
        expect(h.violation).to.equal(undefined);
        h.checkNothingLost();
        h.q.shutDown();
        await settle();
        expect(h.state.every((s) => s === 'idle')).to.equal(true);
      }),
      { numRuns: 200 },
    );
  });

  it('with delayed and rate-limited adds on a fake clock: exclusive and lossless', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(timedOp, { maxLength: 150 }), async (ops) => {
        const h = new Harness();
        for (const op of ops) {
          await h.apply(op);
          expect(h.violation).to.equal(undefined);
        }
        await h.drain();
        expect(h.violation).to.equal(undefined);
        h.checkNothingLost();
        // Every hand-out answers at least one add: no key appears out of nowhere.
        for (const [, k] of h.handed) expect(h.lastAdd.has(k)).to.equal(true);
      }),
      { numRuns: 200 },
    );
  });
});
