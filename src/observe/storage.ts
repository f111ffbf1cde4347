/**
 * Can the engine cap a container's writable layer itself (HostConfig.StorageOpt size)? berth
 * asks the engine's info (its driver, "Backing Filesystem" and data root) once per engine and
 * keeps the answer. Three drivers can:
 *  - btrfs: a subvolume per layer, capped by a qgroup limit (the driver turns the file system's
 *    quotas on itself at the first size asked); the attempt meets EDQUOT at the cap.
 *  - zfs: a dataset per layer, capped by its `quota` property.
 *  - overlay2, where its data root is xfs mounted with project quotas. The info does not say
 *    whether project quotas are on, and an engine asked for a size it cannot enforce refuses
 *    the create. So berth also looks at the data root's mount, as this machine sees it
 *    (/proc/self/mounts: the engine on this host's socket): xfs with `prjquota` (what `pquota`
 *    shows as). An engine elsewhere, a data root whose mount berth cannot see, or xfs without
 *    project quotas (a kernel without XFS quota support among them): berth measures.
 */
import { readFile } from 'node:fs/promises';
import type { Engine } from '../engine/types';

const known = new WeakMap<Engine, Promise<EngineCaps>>();

/** The mount holding `p` (the longest mount point above it) in a /proc/self/mounts text: its type and options. */
export function mountOf(mounts: string, p: string): { type: string; options: string[] } | undefined {
  let best: { at: string; type: string; options: string[] } | undefined;
  for (const line of mounts.split('\n')) {
    const [, rawAt, type, opts] = line.split(' ');
    if (!rawAt || !type || opts === undefined) continue;
    // /proc/self/mounts escapes space, tab, newline and backslash as octal
    const at = rawAt.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    const under = at === '/' || p === at || p.startsWith(`${at}/`);
    if (under && (!best || at.length >= best.at.length)) best = { at, type, options: opts.split(',') };
  }
  return best && { type: best.type, options: best.options };
}

/** Whether a data root on this mount lets overlay2 cap a layer's size. */
export function quotaMount(m: { type: string; options: string[] } | undefined): boolean {
  return m?.type === 'xfs' && m.options.some((o) => o === 'prjquota' || o === 'pquota');
}

/** The storage drivers that cap a layer whatever their data root's mount says. */
const CAPPING_DRIVERS = new Set(['btrfs', 'zfs']);

/**
 * What `engine` caps itself: a writable layer's size (btrfs, zfs, overlay2 on xfs with project
 * quotas) and a `local` volume's (`size` option: the volumes under a data root on xfs with project
 * quotas, whatever the storage driver); cached per engine, an error not kept.
 */
export function engineCaps(engine: Engine): Promise<EngineCaps> {
  const kept = known.get(engine);
  if (kept) return kept;
  const asked = (async (): Promise<EngineCaps> => {
    if (!engine.local) return { layer: false, volumes: false };
    const s = await engine.local.storage();
    const mounts = s.dataRoot ? await readFile('/proc/self/mounts', 'utf8').catch(() => '') : '';
    const quota = s.dataRoot !== '' && quotaMount(mountOf(mounts, s.dataRoot));
    return { layer: CAPPING_DRIVERS.has(s.driver) || (s.driver === 'overlay2' && s.backingFs === 'xfs' && quota), volumes: quota };
  })();
  known.set(engine, asked);
  asked.catch(() => known.delete(engine));
  return asked;
}

export interface EngineCaps {
  /** A writable layer's size (HostConfig.StorageOpt size). */
  layer: boolean;
  /** A local volume's size (its `size` driver option). */
  volumes: boolean;
}
