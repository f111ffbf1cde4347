/** `berth get [NAME] [-l k=v] [-o wide|json|yaml] [--sets]`: the attempts and their status, or the AttemptSets with their children counted by phase. */
import { stringify } from 'yaml';
import { EXIT, PHASES, REASONS } from '../../constants';
import { loadSpecs } from '../../spec/loader';
import type { DamagedRecord } from '../../status/store';
import type { AttemptStatus } from '../../status/types';
import { UsageError, type Context } from '../context';
import { age, duration, table } from './shared';

export interface GetOptions {
  output?: 'wide' | 'json' | 'yaml' | 'text';
  selector?: string[];
  /** Rows of AttemptSets (counts of their children by phase) instead of attempts. */
  sets?: boolean;
}

export interface Row {
  name: string;
  phase: string;
  reason: string;
  exitCode: number | null;
  run: number;
  age: string;
  duration: string;
  labels: Record<string, string>;
  image: string;
  results: string;
  status: AttemptStatus | null;
  /** Set when the attempt's status record is damaged (and so not read). */
  damaged?: DamagedRecord;
}

export function parseSelector(sel: string[]): [string, string][] {
  return sel
    .flatMap((s) => s.split(','))
    .filter(Boolean)
    .map((kv) => {
      const i = kv.indexOf('=');
      if (i <= 0) throw new UsageError(`-l ${JSON.stringify(kv)}: expected key=value`);
      return [kv.slice(0, i), kv.slice(i + 1).replace(/^=/, '')] as [string, string];
    });
}

/** Whether `labels` carry every key=value of a parsed selector. */
export function matchesSelector(labels: Record<string, string>, want: [string, string][]): boolean {
  return want.every(([k, v]) => labels[k] === v);
}

export async function collectRows(ctx: Context, name?: string, selector: string[] = []): Promise<Row[]> {
  const want = parseSelector(selector);
  const [load, statuses] = await Promise.all([loadSpecs({ specsDir: ctx.specsDir, resultsRoot: ctx.resultsRoot }), ctx.store().loadAll()]);
  const damaged = ctx.store().damaged();
  const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
  const names = new Set([...specs.keys(), ...statuses.keys(), ...damaged.keys()]);
  const now = Date.now();
  const rows: Row[] = [];
  for (const n of [...names].sort()) {
    if (name && n !== name) continue;
    const spec = specs.get(n)?.spec;
    const labels = spec?.labels ?? {};
    if (!matchesSelector(labels, want)) continue;
    const st = statuses.get(n);
    const bad = st ? undefined : damaged.get(n);
    const end = st?.finishedAt ? Date.parse(st.finishedAt) : now;
    rows.push({
      name: n,
      phase: st?.phase ?? 'Pending',
      reason: st?.reason ?? (st ? '' : bad ? REASONS.recordDamaged : REASONS.notReconciled),
      exitCode: st?.exitCode ?? null,
      run: st?.run ?? 0,
      age: age(st?.createdAt, now),
      // The engine may stamp a very short run's start after its finish: show 0s, not a negative.
      duration: st?.startedAt ? duration(Math.max(0, end - Date.parse(st.startedAt))) : '-',
      labels,
      image: spec?.image ?? '',
      results: st?.resultsDir ?? '',
      status: st ?? null,
      ...(bad ? { damaged: bad } : {}),
    });
  }
  return rows;
}

export function renderRows(rows: Row[], wide: boolean): string {
  const head = ['NAME', 'PHASE', 'REASON', 'EXIT', 'RUN', 'AGE', 'DURATION'];
  if (wide) head.push('IMAGE', 'LABELS', 'RESULTS');
  const body = rows.map((r) => {
    const base = [r.name, r.phase, r.reason || '-', r.exitCode === null ? '-' : String(r.exitCode), String(r.run || '-'), r.age, r.duration];
    if (wide) {
      base.push(r.image || '-', Object.entries(r.labels).map(([k, v]) => `${k}=${v}`).join(',') || '-', r.results || '-');
    }
    return base;
  });
  return table([head, ...body]);
}

export interface SetRow {
  name: string;
  valid: boolean;
  children: number;
  phases: Record<string, number>;
  labels: Record<string, string>;
  source: string;
}

/** One row per AttemptSet: its children (those matching the selector) counted by phase; no record yet counts as Pending. */
export async function collectSetRows(ctx: Context, name?: string, selector: string[] = []): Promise<SetRow[]> {
  const want = parseSelector(selector);
  const [load, statuses] = await Promise.all([loadSpecs({ specsDir: ctx.specsDir, resultsRoot: ctx.resultsRoot }), ctx.store().loadAll()]);
  const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
  const rows: SetRow[] = [];
  for (const [setName, set] of [...(load.sets ?? new Map())].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (name && setName !== name) continue;
    const phases: Record<string, number> = Object.fromEntries(PHASES.map((p) => [p, 0]));
    let children = 0;
    for (const c of set.children) {
      const labels = specs.get(c)?.spec.labels;
      if (want.length && !(labels && matchesSelector(labels, want))) continue;
      children++;
      const phase = statuses.get(c)?.phase ?? 'Pending';
      phases[phase] = (phases[phase] ?? 0) + 1;
    }
    if (want.length && children === 0) continue;
    rows.push({ name: setName, valid: set.valid, children, phases, labels: {}, source: `${set.policy.source.file}:${set.policy.source.line}` });
  }
  return rows;
}

function renderSetRows(rows: SetRow[]): string {
  const head = ['NAME', 'CHILDREN', ...PHASES.map((p) => p.toUpperCase()), 'SOURCE'];
  return table([head, ...rows.map((r) => [r.valid ? r.name : `${r.name} (invalid)`, String(r.children), ...PHASES.map((p) => String(r.phases[p] ?? 0)), r.source])]);
}

async function runGetSets(ctx: Context, name: string | undefined, o: GetOptions): Promise<number> {
  const rows = await collectSetRows(ctx, name, o.selector ?? []);
  if (name && rows.length === 0) {
    ctx.io.err(`berth: AttemptSet ${JSON.stringify(name)} not found\n`);
    return EXIT.failed;
  }
  const data = rows.map(({ labels: _l, ...r }) => r);
  if (o.output === 'json') ctx.io.out(JSON.stringify(name ? data[0] : { items: data }, null, 2) + '\n');
  else if (o.output === 'yaml') ctx.io.out(stringify(name ? data[0] : { items: data }));
  else if (rows.length === 0) ctx.io.out('No AttemptSets.\n');
  else ctx.io.out(renderSetRows(rows));
  return EXIT.ok;
}

export async function runGet(ctx: Context, name: string | undefined, o: GetOptions): Promise<number> {
  if (o.sets) return runGetSets(ctx, name, o);
  const rows = await collectRows(ctx, name, o.selector ?? []);
  if (name && rows.length === 0) {
    ctx.io.err(`berth: attempt ${JSON.stringify(name)} not found\n`);
    return EXIT.failed;
  }
  const data = rows.map((r) => ({
    name: r.name,
    phase: r.phase,
    reason: r.reason || null,
    exitCode: r.exitCode,
    run: r.run,
    labels: r.labels,
    image: r.image || null,
    results: r.results || null,
    status: r.status,
    ...(r.damaged ? { damagedRecord: { file: r.damaged.file, problem: r.damaged.problem, ...(r.damaged.keptAt ? { keptAt: r.damaged.keptAt } : {}) } } : {}),
  }));
  if (o.output === 'json') ctx.io.out(JSON.stringify(name ? data[0] : { items: data }, null, 2) + '\n');
  else if (o.output === 'yaml') ctx.io.out(stringify(name ? data[0] : { items: data }));
  else if (rows.length === 0) ctx.io.out('No attempts.\n');
  else ctx.io.out(renderRows(rows, o.output === 'wide'));
  return EXIT.ok;
}
