/**
 * What berth keeps of its builds in the state folder, shared by every instance that uses it
 * (`<state>/builds/`): `<hash>.log`, the build's output (`berth logs --build NAME`), and
 * `<hash>.json`, how its last build ended: built (the image's id) or failed (BuildFailed's
 * message), so a failed build is not tried again by a restarted berth, only when its hash changes
 * or on `berth rerun`. Written atomically (temp, fsync, rename); a damaged or foreign file reads as none.
 * A built record is also what says which instance built an image (builtBy): the image itself
 * carries only its build hash (one label: the classic builder commits a step per build label).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BUILD } from '../constants';
import { writeFileAtomic } from '../status/atomic-file';

export interface BuildRecord {
  hash: string;
  tag: string;
  state: 'built' | 'failed';
  /** When the build ended (ISO). */
  at: string;
  /** Built: the image's id. */
  id?: string;
  /** Failed: BuildFailed's message (the Dockerfile line, the last output lines). */
  message?: string;
  /** The builder the engine was driven with (BuildClient.builder). */
  builder: string;
  /** The context (real path) and Dockerfile it was built from. */
  context: string;
  dockerfile: string;
  /** The instance whose berth built it. */
  instance: string;
  /** How long it took (ms). */
  ms?: number;
}

const HASH = /^[0-9a-f]{64}$/;

export const buildsDir = (stateDir: string): string => path.join(stateDir, BUILD.dir);
export const buildLogPath = (stateDir: string, hash: string): string => path.join(buildsDir(stateDir), `${hash}.log`);
export const buildRecordPath = (stateDir: string, hash: string): string => path.join(buildsDir(stateDir), `${hash}.json`);

/** The record of `hash`'s last build, if there is a sound one. */
export function readBuildRecord(stateDir: string, hash: string): BuildRecord | undefined {
  if (!HASH.test(hash)) return undefined;
  let v: Partial<BuildRecord>;
  try {
    v = JSON.parse(readFileSync(buildRecordPath(stateDir, hash), 'utf8')) as Partial<BuildRecord>;
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null || v.hash !== hash || (v.state !== 'built' && v.state !== 'failed') || typeof v.at !== 'string') return undefined;
  if (v.state === 'failed' && typeof v.message !== 'string') return undefined;
  return v as BuildRecord;
}

export async function writeBuildRecord(stateDir: string, rec: BuildRecord): Promise<void> {
  await writeFileAtomic(buildRecordPath(stateDir, rec.hash), `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o600 });
}

/**
 * The record saying `instance` built the image `id` of build `hash`, or undefined: the record of
 * the hash's last build names this instance and this very image (an image of the same hash built
 * since by another berth, or built again, is another id).
 */
export function builtBy(stateDir: string, hash: string, id: string, instance: string): BuildRecord | undefined {
  const rec = readBuildRecord(stateDir, hash);
  return rec?.state === 'built' && rec.id === id && rec.instance === instance ? rec : undefined;
}

/** The sound records of the state folder's builds (none when it has no builds folder). */
export function readBuildRecords(stateDir: string): BuildRecord[] {
  let names: string[];
  try {
    names = readdirSync(buildsDir(stateDir));
  } catch {
    return [];
  }
  return names.flatMap((n) => {
    const rec = n.endsWith('.json') ? readBuildRecord(stateDir, n.slice(0, -'.json'.length)) : undefined;
    return rec ? [rec] : [];
  });
}
