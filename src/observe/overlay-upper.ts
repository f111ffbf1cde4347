/**
 * The writable layer's folder of a running container whose engine does not name it: the
 * containerd image store (its snapshotter, `overlayfs`, leaves GraphDriver.Data empty). The
 * container's root is an overlay mount; its `upperdir=` option, read from the container's own
 * mount table (/proc/<its pid>/mountinfo), is the folder its writes land in, as the engine's mount
 * namespace names it: berth uses it only when this host has that folder (berth beside the engine).
 */
import { promises as fs } from 'node:fs';

/** The `upperdir=` of the overlay mounted at `/` in a mountinfo text; undefined when there is none. */
export function rootUpperDir(mountinfo: string): string | undefined {
  let upper: string | undefined;
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    if (before.split(' ')[4] !== '/') continue;
    const [fstype, , options = ''] = after.split(' ');
    if (fstype !== 'overlay') continue;
    const opt = options.split(',').find((o) => o.startsWith('upperdir='));
    // mountinfo writes a space, a tab, a line break and a backslash as octal escapes
    if (opt) upper = opt.slice('upperdir='.length).replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  }
  return upper?.startsWith('/') ? upper : undefined;
}

/** The writable layer's folder of the container whose process is `pid`, when this host has it; else undefined. */
export async function upperDirOfPid(pid: number): Promise<string | undefined> {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const text = await fs.readFile(`/proc/${pid}/mountinfo`, 'utf8').catch(() => '');
  const upper = rootUpperDir(text);
  if (!upper) return undefined;
  const st = await fs.stat(upper).catch(() => undefined);
  return st?.isDirectory() ? upper : undefined;
}
