/**
 * Prometheus metrics of a controller (prom-client), named after controller-runtime's where
 * they fit: reconcile totals, errors and durations; work queue depth, adds, retries and
 * latencies; attempts by phase; engine calls by kind; engine event stream reconnects; whether
 * the engine answers.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { PHASES, type Phase } from '../constants';
import type { CallListener } from '../engine/wrap';
import type { DiskReading, DiskWhat } from '../observe/disk';
import type { QueueMetrics } from './queue';
import type { AttemptStatus } from '../status/types';

const CONTROLLER = 'attempt';

export class ControllerMetrics {
  readonly registry = new Registry();
  readonly reconcileTotal = new Counter({
    name: 'controller_runtime_reconcile_total',
    help: 'Reconciliations per controller and result',
    labelNames: ['controller', 'result'],
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: 'controller_runtime_reconcile_errors_total',
    help: 'Reconciliation errors per controller',
    labelNames: ['controller'],
    registers: [this.registry],
  });
  readonly reconcileTime = new Histogram({
    name: 'controller_runtime_reconcile_time_seconds',
    help: 'Time per reconciliation (one batch of keys: observe, plan, execute)',
    labelNames: ['controller'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({ name: 'workqueue_depth', help: 'Current depth of the work queue', labelNames: ['name'], registers: [this.registry] });
  readonly queueAdds = new Counter({ name: 'workqueue_adds_total', help: 'Adds handled by the work queue', labelNames: ['name'], registers: [this.registry] });
  readonly queueRetries = new Counter({
    name: 'workqueue_retries_total',
    help: 'Retries (delayed or rate-limited adds) handled by the work queue',
    labelNames: ['name'],
    registers: [this.registry],
  });
  readonly queueLatency = new Histogram({
    name: 'workqueue_queue_duration_seconds',
    help: 'How long a key stays in the queue before it is processed',
    labelNames: ['name'],
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 10, 60],
    registers: [this.registry],
  });
  readonly workDuration = new Histogram({
    name: 'workqueue_work_duration_seconds',
    help: 'How long processing a key takes',
    labelNames: ['name'],
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 5, 10, 60],
    registers: [this.registry],
  });
  readonly attempts = new Gauge({ name: 'berth_attempts', help: 'Attempts by phase', labelNames: ['phase'], registers: [this.registry] });
  readonly engineCalls = new Counter({
    name: 'berth_engine_calls_total',
    help: 'Engine API calls by resource kind, operation and result',
    labelNames: ['kind', 'op', 'result'],
    registers: [this.registry],
  });
  readonly engineCallTime = new Histogram({
    name: 'berth_engine_call_duration_seconds',
    help: 'Engine API call latency',
    labelNames: ['kind', 'op'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly streamReconnects = new Counter({
    name: 'berth_engine_event_stream_reconnects_total',
    help: 'Reconnects of the engine event stream',
    registers: [this.registry],
  });
  readonly engineUp = new Gauge({
    name: 'berth_engine_up',
    help: '1 while the engine answers the controller, 0 while it cannot be reached or does not answer in time',
    registers: [this.registry],
  });
  readonly diskPressure = new Gauge({
    name: 'berth_disk_pressure',
    help: "1 while new runs wait for disk space on this file system (the engine's data root, the results root), else 0",
    labelNames: ['filesystem'],
    registers: [this.registry],
  });
  readonly diskFree = new Gauge({
    name: 'berth_disk_free_ratio',
    help: 'Share of the file system free, of its bytes or its inodes, as last read',
    labelNames: ['filesystem', 'of'],
    registers: [this.registry],
  });
  readonly specErrors = new Gauge({ name: 'berth_spec_errors', help: 'Spec errors in the last load of the specs folder', registers: [this.registry] });

  constructor(opts: { processMetrics?: boolean } = {}) {
    // Process metrics only when served; their event-loop lag probe samples once a second, not
    // every 10 ms, so an idle controller stays idle.
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'berth_', eventLoopMonitoringPrecision: 1000 });
    for (const p of PHASES) this.attempts.set({ phase: p }, 0);
    this.engineUp.set(1);
  }

  readonly engineListener: CallListener = ({ kind, op, ms, error }) => {
    this.engineCalls.inc({ kind, op, result: error ? 'error' : 'ok' });
    this.engineCallTime.observe({ kind, op }, ms / 1000);
  };

  queueMetrics(name = CONTROLLER): QueueMetrics {
    return {
      add: () => this.queueAdds.inc({ name }),
      depth: (n) => this.queueDepth.set({ name }, n),
      retry: () => this.queueRetries.inc({ name }),
      queueLatency: (_k, ms) => this.queueLatency.observe({ name }, ms / 1000),
      workDuration: (_k, ms) => this.workDuration.observe({ name }, ms / 1000),
    };
  }

  reconciled(result: 'success' | 'error' | 'requeue_after', seconds: number): void {
    this.reconcileTotal.inc({ controller: CONTROLLER, result });
    if (result === 'error') this.reconcileErrors.inc({ controller: CONTROLLER });
    this.reconcileTime.observe({ controller: CONTROLLER }, seconds);
  }

  phases(counts: Map<Phase, number>): void {
    for (const p of PHASES) this.attempts.set({ phase: p }, counts.get(p) ?? 0);
  }

  /** A batch's load and records: its spec errors, and the attempts by phase. */
  observeLoad(specErrors: number, records: Iterable<Pick<AttemptStatus, 'phase'>>): void {
    this.specErrors.set(specErrors);
    const counts = new Map<Phase, number>(PHASES.map((ph) => [ph, 0]));
    for (const r of records) counts.set(r.phase, (counts.get(r.phase) ?? 0) + 1);
    this.phases(counts);
  }

  /** The disks as a batch read them: which are under pressure, and how much of each is free (a skipped one is not shown). */
  observeDisk(readings: readonly DiskReading[], pressured: ReadonlySet<DiskWhat>): void {
    for (const r of readings) {
      if (r.skipped) continue;
      this.diskPressure.set({ filesystem: r.what }, pressured.has(r.what) ? 1 : 0);
      if (r.totalBytes) this.diskFree.set({ filesystem: r.what, of: 'bytes' }, (r.freeBytes ?? 0) / r.totalBytes);
      if (r.totalInodes) this.diskFree.set({ filesystem: r.what, of: 'inodes' }, (r.freeInodes ?? 0) / r.totalInodes);
    }
  }
}
