/**
 * Image garbage collection, decided (pure): docs/CONTRACT.md "Images berth brought are collected".
 * From what was observed outside (the data root's file system, the engine's images, what this
 * berth pulled or built, the images the attempts not yet final need, the containers' images),
 * which images go: when the file system of the engine's data root is fuller than `--image-gc-high`,
 * images berth brought that nothing needs and nothing used for `--image-gc-min-age`, least
 * recently used first, until the sizes removed bring it to `--image-gc-low` (an image's size
 * counts layers it may share: the next reading says what was really freed).
 *
 * Never a candidate: an image berth did not bring (no record of this instance's pull or build of
 * that very id), one that an attempt not yet final needs (named or built by its spec, its
 * sidecars', its grader's; a set's unfinished children are attempts too), one a container uses,
 * and the images berth runs itself (the egress proxy's). Nothing is removed when the data root
 * cannot be read (a remote engine): no reading, no decision.
 */
import type { DiskReading } from '../observe/disk';

export interface ImageGcConfig {
  highPercent: number;
  lowPercent: number;
  minAgeMs: number;
}

/** An image the engine holds, as GC reads it. */
export interface GcImage {
  id: string;
  tags: readonly string[];
  size?: number;
}

/** What this berth brought: an image id it pulled or built, under which reference, and when (ms). */
export interface Brought {
  id: string;
  ref: string;
  how: 'pulled' | 'built';
  at: number;
}

export interface ImageGcInput {
  config: ImageGcConfig;
  /** The engine data root's reading (observe/disk.ts); skipped or absent: nothing is decided. */
  reading: DiskReading | undefined;
  images: readonly GcImage[];
  brought: readonly Brought[];
  /** Ids of the images an attempt not yet final needs, and of those any container uses. */
  needed: ReadonlySet<string>;
  /** References berth runs itself (the egress proxy image): never removed. */
  own: ReadonlySet<string>;
  /** When each image id was last used by a run (ms), where known. */
  lastUsed: ReadonlyMap<string, number>;
  now: number;
}

export interface ImageRemoval {
  id: string;
  /** The reference removed (berth's tag or pulled reference: another tag of the image stays). */
  ref: string;
  how: 'pulled' | 'built';
  size: number;
  lastUsed: number;
}

export interface ImageGcDecision {
  /** Why GC runs (or why not), one line. */
  why: string;
  removals: ImageRemoval[];
}

/** A reference without a tag or digest names its `:latest` (as the engine lists it). */
function tagged(ref: string): string {
  const last = ref.slice(ref.lastIndexOf('/') + 1);
  return last.includes(':') || last.includes('@') ? ref : `${ref}:latest`;
}

const pct = (n: number) => `${Math.round(n * 10) / 10}%`;

/**
 * Why no GC is due with this reading (the data root cannot be read, or is not above the high
 * mark), or undefined when it is: whoever runs GC asks this before it gathers what the rest needs
 * (every spec and record: at 100,000 specs, half a second a resync for nothing).
 */
export function gcNotDue(reading: ImageGcInput['reading'], config: Pick<ImageGcConfig, 'highPercent'>): string | undefined {
  const r = reading;
  if (!r || r.skipped || r.freeBytes === undefined || !r.totalBytes) return `the engine's data root cannot be read${r?.skipped ? `: ${r.skipped}` : ''}`;
  const usedPct = ((r.totalBytes - r.freeBytes) / r.totalBytes) * 100;
  if (usedPct <= config.highPercent) return `the engine's data root (${r.path}) is ${pct(usedPct)} full, not above --image-gc-high ${config.highPercent}%`;
  return undefined;
}

export function planImageGc(inp: ImageGcInput): ImageGcDecision {
  const notDue = gcNotDue(inp.reading, inp.config);
  if (notDue !== undefined) return { why: notDue, removals: [] };
  const r = inp.reading as NonNullable<ImageGcInput['reading']> & { totalBytes: number; freeBytes: number };
  const total = r.totalBytes;
  const used = total - r.freeBytes;
  const usedPct = (used / total) * 100;
  const { highPercent, lowPercent, minAgeMs } = inp.config;
  let toFree = used - (lowPercent / 100) * total;
  const byId = new Map(inp.images.map((i) => [i.id, i]));
  const own = new Set([...inp.own].map(tagged));
  const candidates: ImageRemoval[] = [];
  const seen = new Set<string>();
  for (const b of inp.brought) {
    const img = byId.get(b.id);
    // gone, or its reference now names another image (retagged by someone): not ours to remove
    if (!img || !img.tags.some((t) => tagged(t) === tagged(b.ref)) || seen.has(`${b.id} ${b.ref}`)) continue;
    seen.add(`${b.id} ${b.ref}`);
    if (inp.needed.has(b.id) || img.tags.some((t) => own.has(tagged(t)))) continue;
    const last = Math.max(b.at, inp.lastUsed.get(b.id) ?? 0);
    if (inp.now - last < minAgeMs) continue;
    candidates.push({ id: b.id, ref: b.ref, how: b.how, size: img.size ?? 0, lastUsed: last });
  }
  candidates.sort((a, b) => a.lastUsed - b.lastUsed || (a.ref < b.ref ? -1 : 1));
  const removals: ImageRemoval[] = [];
  const counted = new Set<string>();
  for (const c of candidates) {
    if (toFree <= 0) break;
    removals.push(c);
    // an image under two of berth's references frees its bytes once, with its last reference
    if (!counted.has(c.id)) toFree -= c.size;
    counted.add(c.id);
  }
  return {
    why: `the engine's data root (${r.path}) is ${pct(usedPct)} full, above --image-gc-high ${highPercent}%: images berth brought that nothing needs go until ${lowPercent}%`,
    removals,
  };
}
