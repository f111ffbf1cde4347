/**
 * Results harvest: when a run ends, before anything is removed, berth writes into the run's
 * folder (beside the `results/` folder the attempt wrote, never inside it, so nothing the
 * attempt left there, such as a link, can redirect berth's writes):
 *   logs.txt       the container's stdout and stderr
 *   status.json    the final status
 *   manifest.json  every file the attempt wrote: path, size, sha256 (links listed, never followed)
 *   egress.jsonl   the egress proxy's decisions, one JSON line each (isolated attempts with egress)
 *   sidecars/<name>.log  each sidecar's output
 */
import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { isNotFound } from '../engine/errors';
import type { Engine } from '../engine/types';
import { writeFileAtomic } from '../status/atomic-file';
import type { AttemptStatus } from '../status/types';

export interface ManifestEntry {
  path: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  sha256?: string;
  target?: string;
}

async function sha256(file: string): Promise<string> {
  const h = createHash('sha256');
  await pipeline(createReadStream(file), h);
  return h.digest('hex');
}

export async function manifest(root: string): Promise<ManifestEntry[]> {
  const out: ManifestEntry[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    let names: string[];
    try {
      names = (await fs.readdir(dir)).sort();
    } catch {
      return;
    }
    for (const n of names) {
      const abs = path.join(dir, n);
      const r = rel ? `${rel}/${n}` : n;
      const st = await fs.lstat(abs);
      if (st.isSymbolicLink()) out.push({ path: r, type: 'symlink', size: 0, target: await fs.readlink(abs) });
      else if (st.isDirectory()) {
        out.push({ path: r, type: 'dir', size: 0 });
        await walk(abs, r);
      } else if (st.isFile()) out.push({ path: r, type: 'file', size: st.size, sha256: await sha256(abs) });
      else out.push({ path: r, type: 'other', size: 0 });
    }
  };
  await walk(root, '');
  return out;
}

export interface SidecarLogs {
  alias: string;
  role: 'egress-proxy' | 'sidecar';
  id: string;
}

/** A container's whole log, or undefined when the container is gone. */
async function logsOf(engine: Engine, id: string): Promise<Buffer | undefined> {
  try {
    const stream = await engine.containers.logs(id, { follow: false });
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
    return Buffer.concat(chunks);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
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

/** Writes logs (when the container still exists), status and manifest into `runDir`. */
export async function harvest(
  engine: Engine,
  runDir: string,
  mountDir: string,
  containerId: string | undefined,
  status: AttemptStatus,
  sidecars: SidecarLogs[] = [],
): Promise<void> {
  await fs.mkdir(runDir, { recursive: true });
  if (containerId) {
    const log = await logsOf(engine, containerId);
    if (log) await writeFileAtomic(path.join(runDir, 'logs.txt'), log);
  }
  for (const sc of sidecars) {
    const log = await logsOf(engine, sc.id);
    if (!log) continue;
    if (sc.role === 'egress-proxy') await writeFileAtomic(path.join(runDir, 'egress.jsonl'), decisionLines(log.toString('utf8')));
    else {
      await fs.mkdir(path.join(runDir, 'sidecars'), { recursive: true });
      await writeFileAtomic(path.join(runDir, 'sidecars', `${sc.alias}.log`), log);
    }
  }
  await writeFileAtomic(path.join(runDir, 'manifest.json'), JSON.stringify({ files: await manifest(mountDir) }, null, 2) + '\n');
  await writeFileAtomic(path.join(runDir, 'status.json'), JSON.stringify(status, null, 2) + '\n');
}
