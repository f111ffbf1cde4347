/**
 * Results harvest: when a run ends, before anything is removed, berth writes into the run's
 * folder (beside the `results/` folder the attempt wrote, never inside it, so nothing the
 * attempt left there, such as a link, can redirect berth's writes):
 *   logs.txt       the container's stdout and stderr
 *   status.json    the final status
 *   manifest.json  every file the attempt wrote: path, size, sha256 (links listed, never followed);
 *                  past spec.harvest's caps, what was left out (and removed from results/)
 *   egress.jsonl   the egress proxy's decisions, one JSON line each (isolated attempts with egress)
 *   sidecars/<name>.log  each sidecar's output
 * Every log passes through the run's redactor (harvest/redaction.ts) before it is capped and
 * written: a secret value never reaches the disk; the manifest flags the results files that hold
 * one (results are kept as the attempt wrote them).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { DEFAULTS } from '../constants';
import { isNotFound } from '../engine/errors';
import type { Engine } from '../engine/types';
import type { SidecarRef } from '../plan/types';
import { truncatedStatus } from '../plan/results-truncated';
import { writeFileAtomic, writeFileAtomicWith } from '../status/atomic-file';
import type { AttemptStatus } from '../status/types';
import { NO_REDACTION, type Redactor } from '../util/redact';
import { writeCappedLog } from '../harvest/capped-log';
import { DEFAULT_BUDGET, DEFAULT_CAPS, removeLeftOut, writeManifest, type HashBudget, type LeftOutBefore, type ResultCaps } from '../harvest/manifest';

export { type ManifestEntry } from '../harvest/manifest';

/** What a harvest keeps: the log cap (bytes per log file) and the manifest's hashing budget. */
export interface HarvestLimits {
  logMaxBytes: number;
  hash: HashBudget;
}

export const DEFAULT_LIMITS: HarvestLimits = { logMaxBytes: DEFAULTS.logMaxBytes, hash: DEFAULT_BUDGET };

/** A sidecar whose log the harvest collects (the plan's SidecarRef). */
export type SidecarLogs = SidecarRef;

/** Only the proxy's JSON decision lines pass, without anything else it may have printed. */
class DecisionLines extends Transform {
  private rest = '';
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const text = this.rest + chunk.toString('utf8');
    const cut = text.lastIndexOf('\n');
    this.rest = text.slice(cut + 1);
    // A line longer than the log cap is no decision: it is not kept whole in memory either.
    if (this.rest.length > 1024 * 1024) this.rest = '';
    if (cut >= 0) this.push(decisionLines(text.slice(0, cut + 1)));
    cb();
  }
  override _flush(cb: TransformCallback): void {
    this.push(decisionLines(this.rest));
    cb();
  }
}

/** The proxy's JSON decision lines, without anything else it may have printed. */
export function decisionLines(log: string): string {
  return log
    .split('\n')
    .filter((l) => {
      try {
        const v = JSON.parse(l) as { event?: unknown };
        return typeof v === 'object' && v !== null && typeof v.event === 'string' && v.event !== 'listening';
      } catch {
        return false;
      }
    })
    .map((l) => l + '\n')
    .join('');
}

/**
 * A container's log, streamed into `file` (redacted, then capped: see capped-log.ts); nothing is
 * written when the container is gone.
 */
export async function saveLog(
  engine: Engine,
  id: string,
  file: string,
  maxBytes: number,
  filter?: () => Transform,
  redactor: Redactor = NO_REDACTION,
): Promise<void> {
  let stream;
  try {
    stream = await engine.containers.logs(id, { follow: false });
  } catch (err) {
    if (isNotFound(err)) return;
    throw err;
  }
  const filtered = filter ? stream.pipe(filter()) : stream;
  if (filter) stream.on('error', (err) => filtered.destroy(err));
  const source = redactor.empty ? filtered : filtered.pipe(redactor.stream());
  if (source !== filtered) filtered.on('error', (err) => source.destroy(err));
  try {
    await writeFileAtomicWith(file, (h) => writeCappedLog(source, h, maxBytes));
  } finally {
    stream.destroy();
  }
}

/** What the harvest of one run keeps of its results folder (spec.harvest), and what a collect left out before it. */
export interface HarvestCapsFor {
  caps: ResultCaps;
  before?: LeftOutBefore;
}

/**
 * Writes logs (when the container still exists), manifest and status into `runDir`; the status
 * last, so a status.json there says the harvest is whole. The manifest is written whole before
 * anything past the caps is removed from `mountDir`. Interrupted by `signal` (berth stopping)
 * while it walks. Returns the status written (truncatedStatus).
 */
export interface HarvestInto {
  /** The run's folder (berth's files), and its results folder inside it (the attempt's, mounted at /results). */
  runDir: string;
  mountDir: string;
  /** The main container (its logs), when it still exists. */
  containerId: string | undefined;
  /** The status to write, as the finish made it. */
  status: AttemptStatus;
  sidecars?: SidecarLogs[];
  limits?: HarvestLimits;
  /** Berth stopping: interrupts the manifest's walk. */
  signal?: AbortSignal;
  caps?: HarvestCapsFor;
  redactor?: Redactor;
}

export async function harvest(
  engine: Engine,
  {
    runDir,
    mountDir,
    containerId,
    status,
    sidecars = [],
    limits = DEFAULT_LIMITS,
    signal,
    caps = { caps: DEFAULT_CAPS },
    redactor = NO_REDACTION,
  }: HarvestInto,
): Promise<AttemptStatus> {
  await fs.mkdir(runDir, { recursive: true });
  if (containerId) await saveLog(engine, containerId, path.join(runDir, 'logs.txt'), limits.logMaxBytes, undefined, redactor);
  for (const sc of sidecars) {
    if (sc.role === 'egress-proxy') await saveLog(engine, sc.id, path.join(runDir, 'egress.jsonl'), limits.logMaxBytes, () => new DecisionLines(), redactor);
    else {
      await fs.mkdir(path.join(runDir, 'sidecars'), { recursive: true });
      await saveLog(engine, sc.id, path.join(runDir, 'sidecars', `${sc.alias}.log`), limits.logMaxBytes, undefined, redactor);
    }
  }
  const opts = { hash: limits.hash, caps: caps.caps, ...(caps.before ? { before: caps.before } : {}), ...(redactor.empty ? {} : { redactor }) };
  const m = await writeFileAtomicWith(path.join(runDir, 'manifest.json'), (h) => writeManifest(mountDir, h, opts, signal));
  // past the caps: the results folder keeps what fits (what a collect left out never came home)
  if (m.truncation.leftOutEntries > (caps.before?.entries ?? 0)) await removeLeftOut(mountDir, caps.caps, signal);
  const final = redactor.redactJson(truncatedStatus(status, m.truncation));
  await writeFileAtomic(path.join(runDir, 'status.json'), JSON.stringify(final, null, 2) + '\n');
  return final;
}
