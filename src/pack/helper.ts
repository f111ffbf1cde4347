/**
 * berth's helper in a container (native/berth-helper.c): its bytes for the engine's machine, and
 * the archive that puts it at EXEC.helperPath (root's, mode 0555, its folder 0755), extracted at
 * `/` through the engine's archive API: before a sandbox's start (its main process), or into a
 * running container before an exec is killed there. Nothing of the image is used.
 */
import { createHash } from 'node:crypto';
import { pack } from 'tar-stream';
import { EXEC } from '../constants';
import { HELPER_BYTES } from './helper-bytes';

export type HelperArch = keyof typeof HELPER_BYTES;

/** The helper's build for an engine's machine (`version().arch`: amd64, arm64, or the kernel's names); undefined: none for it. */
export function helperArch(engineArch: string): HelperArch | undefined {
  const a = engineArch.toLowerCase();
  if (a === 'amd64' || a === 'x86_64') return 'x86_64';
  if (a === 'arm64' || a === 'aarch64') return 'aarch64';
  return undefined;
}

const checked = new Map<HelperArch, Buffer>();

/** The helper's bytes, checked against the sha256 the generator recorded beside them. */
export function helperBytes(arch: HelperArch): Buffer {
  const kept = checked.get(arch);
  if (kept) return kept;
  const b = Buffer.from(HELPER_BYTES[arch].base64, 'base64');
  if (createHash('sha256').update(b).digest('hex') !== HELPER_BYTES[arch].sha256)
    throw new Error(`berth-helper for ${arch}: its bytes do not match their sha256`);
  checked.set(arch, b);
  return b;
}

/** The tar that puts the helper at EXEC.helperPath when extracted at `/`. */
export async function helperTar(arch: HelperArch): Promise<Buffer> {
  const p = pack();
  const dir = EXEC.helperDir.replace(/^\/+/, '');
  const file = EXEC.helperPath.replace(/^\/+/, '');
  const body = helperBytes(arch);
  p.entry({ name: `${dir}/`, type: 'directory', mode: 0o755, uid: 0, gid: 0 });
  p.entry({ name: file, type: 'file', mode: 0o555, uid: 0, gid: 0, size: body.length }, body);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
