/**
 * Disk pressure, decided (pure): from the readings observed outside the planner (observe/disk.ts)
 * and the thresholds (`--disk-pressure-free`, `--disk-pressure-inodes`, as the kubelet's
 * `nodefs.available<10%` and `nodefs.inodesFree<5%`), whether new runs wait `Pending/DiskPressure`,
 * and the one line that says why. Running runs go on; a file system that was skipped (a remote
 * engine's data root) decides nothing.
 */
import { DEFAULTS } from '../constants';
import type { DiskReading } from '../observe/disk';
import { parseSize } from '../spec/quantity';

/** A floor: a percentage of the file system's size (or inodes), or an absolute amount (bytes, inodes). */
export type Floor = { percent: number } | { amount: number };

export interface DiskThresholds {
  /** Free space below which new runs wait. */
  free: Floor;
  /** Free inodes below which new runs wait. */
  inodes: Floor;
}

/** What the planner reads: the readings of this pass and the thresholds. */
export interface DiskInput {
  readings: readonly DiskReading[];
  thresholds: DiskThresholds;
}

const NAMES: Record<DiskReading['what'], string> = { 'engine-data-root': "the engine's data root", 'results-root': 'the results root' };

function below(free: number, total: number, floor: Floor): boolean {
  return 'percent' in floor ? total > 0 && (free / total) * 100 < floor.percent : free < floor.amount;
}

export function floorText(floor: Floor, unit: 'bytes' | 'inodes'): string {
  return 'percent' in floor ? `${floor.percent}%` : `${floor.amount} ${unit}`;
}

/** A share, rounded down to a whole percent (a message that changes only when the share does). */
const pct = (free: number, total: number) => `${Math.floor((free / total) * 100)}%`;

/** Why each file system is under pressure, one line each; empty when none is. */
export function pressures(d: DiskInput | undefined): string[] {
  return underPressure(d).map((p) => p.why);
}

/** The file systems under pressure. */
export function pressured(d: DiskInput | undefined): Set<DiskReading['what']> {
  return new Set(underPressure(d).map((p) => p.what));
}

function underPressure(d: DiskInput | undefined): { what: DiskReading['what']; why: string }[] {
  if (!d) return [];
  const out: { what: DiskReading['what']; why: string }[] = [];
  for (const r of d.readings) {
    if (r.skipped) continue;
    const name = `${NAMES[r.what]} (${r.path})`;
    if (r.freeBytes !== undefined && r.totalBytes !== undefined && below(r.freeBytes, r.totalBytes, d.thresholds.free))
      out.push({
        what: r.what,
        why: `${name} has ${pct(r.freeBytes, r.totalBytes)} of its space free, below --disk-pressure-free ${floorText(d.thresholds.free, 'bytes')}`,
      });
    // a file system with no fixed number of inodes (totalInodes 0, as btrfs) never runs out of them
    if (r.freeInodes !== undefined && r.totalInodes && below(r.freeInodes, r.totalInodes, d.thresholds.inodes))
      out.push({
        what: r.what,
        why: `${name} has ${pct(r.freeInodes, r.totalInodes)} of its inodes free, below --disk-pressure-inodes ${floorText(d.thresholds.inodes, 'inodes')}`,
      });
  }
  return out;
}

/** The message of a run held back by disk pressure, or undefined when there is none. */
export function diskPressure(d: DiskInput | undefined): string | undefined {
  const p = pressures(d);
  return p.length ? `disk pressure: ${p.join('; ')}; new runs wait, running ones go on` : undefined;
}

/**
 * A threshold as written on the command line or in BERTH_DISK_PRESSURE_*: `10%`, or an amount
 * (bytes: a quantity such as `5Gi` or `500M`, or a plain number; inodes: a plain number); `0`
 * (or `0%`) turns the check off. Undefined when it is neither.
 */
export function parseFloor(text: string, unit: 'bytes' | 'inodes'): Floor | undefined {
  const t = text.trim();
  const m = /^(\d+(?:\.\d+)?)%$/.exec(t);
  if (m) {
    const percent = Number(m[1]);
    return percent <= 100 ? { percent } : undefined;
  }
  if (t === '0') return { amount: 0 };
  if (unit === 'inodes') return /^\d+$/.test(t) && Number.isSafeInteger(Number(t)) ? { amount: Number(t) } : undefined;
  const q = parseSize(t);
  return q.ok ? { amount: q.bytes } : undefined;
}

/** The thresholds in force: the flags', else BERTH_DISK_PRESSURE_FREE and _INODES, else the kubelet-like defaults. */
export function diskThresholds(flags: { free?: Floor; inodes?: Floor }, env: NodeJS.ProcessEnv): DiskThresholds {
  const from = (v: string | undefined, unit: 'bytes' | 'inodes', dflt: string) =>
    (v !== undefined ? parseFloor(v, unit) : undefined) ?? (parseFloor(dflt, unit) as Floor);
  return {
    free: flags.free ?? from(env.BERTH_DISK_PRESSURE_FREE, 'bytes', DEFAULTS.diskPressureFree),
    inodes: flags.inodes ?? from(env.BERTH_DISK_PRESSURE_INODES, 'inodes', DEFAULTS.diskPressureInodes),
  };
}
