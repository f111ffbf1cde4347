/**
 * A run's results, brought home from the node: the tar of its results volume (the engine's
 * archive API on the node) extracted under the results folder where berth runs. Regular files
 * and folders are written; a link is recreated as a link and never followed: an entry whose
 * path passes through a link, or leaves the folder, is skipped.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { extract } from 'tar-stream';

async function throughLink(root: string, rel: string): Promise<boolean> {
  const parts = rel.split('/').filter(Boolean);
  for (let i = 1; i < parts.length; i++) {
    const st = await fs.lstat(path.join(root, ...parts.slice(0, i))).catch(() => undefined);
    if (st?.isSymbolicLink()) return true;
  }
  return false;
}

/** Extracts `tar` (entries under `strip/`) into `into`. */
export async function extractResults(tar: Readable, strip: string, into: string): Promise<void> {
  await fs.mkdir(into, { recursive: true });
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    ex.on('finish', resolve);
    ex.on('error', reject);
  });
  ex.on('entry', (h, stream, next) => {
    void (async () => {
      const name = h.name.replace(/^\.?\//, '');
      const rel = name === strip || name === `${strip}/` ? '' : name.startsWith(`${strip}/`) ? name.slice(strip.length + 1) : undefined;
      const dest = rel === undefined ? undefined : path.join(into, rel);
      const safe = rel !== undefined && dest !== undefined && !rel.split('/').includes('..') && !(await throughLink(into, rel));
      if (!safe || !dest) {
        stream.resume();
        return;
      }
      if (h.type === 'directory') {
        await fs.mkdir(dest, { recursive: true });
        stream.resume();
      } else if (h.type === 'file') {
        const chunks: Buffer[] = [];
        for await (const c of stream) chunks.push(c as Buffer);
        await fs.writeFile(dest, Buffer.concat(chunks), { flag: 'wx', mode: 0o644 }).catch(async (err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
          const st = await fs.lstat(dest);
          if (st.isFile()) await fs.writeFile(dest, Buffer.concat(chunks));
        });
      } else if (h.type === 'symlink' && h.linkname) {
        await fs.symlink(h.linkname, dest).catch(() => undefined);
        stream.resume();
      } else stream.resume();
    })().then(
      () => next(),
      (err: Error) => next(err),
    );
  });
  tar.pipe(ex);
  await done;
}
