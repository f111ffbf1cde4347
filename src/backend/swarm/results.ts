/**
 * A run's results, brought home from the node: the tar of its results volume (the engine's
 * archive API on the node) extracted under the results folder where berth runs. Regular files
 * and folders are written; a link is recreated as a link and never followed: an entry whose
 * path passes through a link, or leaves the folder, is skipped. Each file streams to disk as it
 * comes (no file is held in memory), and only what fits the caps (spec.harvest) is written, in
 * the tar's order: entries while they number at most `maxFiles`, files while their sizes add up
 * to at most `maxBytes` (one that does not fit is left out, a later smaller one may still fit).
 * What is left out is counted, its first `listMax` entries listed, for the manifest.
 */
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { extract, type Header } from 'tar-stream';
import { DEFAULTS } from '../../constants';
import type { CollectLeftOut } from '../../engine/types';

type Listed = CollectLeftOut['listed'][number];

function typeOf(h: Header): Listed['type'] {
  return h.type === 'file' ? 'file' : h.type === 'directory' ? 'dir' : h.type === 'symlink' ? 'symlink' : 'other';
}

async function throughLink(root: string, rel: string): Promise<boolean> {
  const parts = rel.split('/').filter(Boolean);
  for (let i = 1; i < parts.length; i++) {
    const st = await fs.lstat(path.join(root, ...parts.slice(0, i))).catch(() => undefined);
    if (st?.isSymbolicLink()) return true;
  }
  return false;
}

/** Extracts `tar` (entries under `strip/`) into `into`, within `caps`; returns what it left out. */
export async function extractResults(
  tar: Readable,
  strip: string,
  into: string,
  caps: { maxBytes: number; maxFiles: number } = { maxBytes: DEFAULTS.harvestMaxBytes, maxFiles: DEFAULTS.harvestMaxFiles },
  listMax: number = DEFAULTS.manifestLeftOutListed,
): Promise<CollectLeftOut> {
  await fs.mkdir(into, { recursive: true });
  const left: CollectLeftOut = { entries: 0, bytes: 0, listed: [] };
  let keptEntries = 0;
  let keptBytes = 0;
  /** Whether the entry fits the caps (counted as kept), else counted and listed as left out. */
  const fits = (rel: string, h: Header): boolean => {
    const size = h.type === 'file' ? (h.size ?? 0) : 0;
    const why = keptEntries >= caps.maxFiles ? 'max-files' : h.type === 'file' && keptBytes + size > caps.maxBytes ? 'max-bytes' : undefined;
    if (!why) {
      keptEntries++;
      keptBytes += size;
      return true;
    }
    left.entries++;
    left.bytes += size;
    if (left.listed.length < listMax) left.listed.push({ path: rel.replace(/\/$/, ''), type: typeOf(h), size, why });
    return false;
  };
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
      if (!safe || !dest || (rel !== '' && !fits(rel, h))) {
        stream.resume();
        return;
      }
      if (h.type === 'directory') {
        await fs.mkdir(dest, { recursive: true });
        stream.resume();
      } else if (h.type === 'file') {
        // streamed as it comes; a link in the way is not followed (O_NOFOLLOW), another file is replaced
        const out = await fs
          .open(dest, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644)
          .catch((err: NodeJS.ErrnoException) => {
            if (err.code === 'ELOOP') return undefined;
            throw err;
          });
        if (!out) {
          stream.resume();
          return;
        }
        try {
          for await (const c of stream) await out.write(c as Buffer);
        } finally {
          await out.close();
        }
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
  return left;
}
