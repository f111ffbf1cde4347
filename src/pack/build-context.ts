/**
 * A build context as the engine's build API takes it: a tar stream of the context's folder after
 * its `.dockerignore` (spec/dockerignore.ts, the Dockerfile and `.dockerignore` always in), as
 * the Docker CLI sends one (entries owned by root, modes and links as they are), streamed as the
 * engine reads it. Every file is read with no link followed (util/tree-walk.ts, util/no-follow.ts):
 * a context is as hostile as a fixture. What is packed is digested as it goes, in the loader's
 * terms (spec/fixture-scan.ts entries), and its build hash compared with the one the spec was
 * loaded with: a context that changed since (a file written meanwhile, a folder swapped) ends the
 * stream with an error before its end, so the engine never builds from it (it reads the whole
 * context before the first step).
 */
import { createHash } from 'node:crypto';
import { promises as fsp, type Stats } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pack, type Pack } from 'tar-stream';
import { DEFAULTS } from '../constants';
import { buildHash, contextFilter } from '../spec/build-context';
import { parseDockerignore, type DockerIgnore } from '../spec/dockerignore';
import { fixtureDigest } from '../spec/fixture-digest';
import type { FixtureEntry } from '../spec/fixture-scan';
import { readBoundedSync } from '../spec/read-spec-file';
import type { NormalizedBuild } from '../spec/types';
import { atFd, openFileAt, readFileAtSync, UnsafePathError } from '../util/no-follow';
import { Slicer } from '../util/slicer';
import { walkTree } from '../util/tree-walk';
import { tarEntry, tarFileEntry } from './archive';

/** Packing gives the event loop a turn at least this often (ms). */
const SLICE_MS = 10;

/** The context changed between the spec's load and its packing: built from the next load. */
export class ContextChangedError extends Error {
  constructor(readonly context: string) {
    super(`the build context ${context} changed since its spec was loaded (its build hash is not the one loaded); it is built from the next load`);
    this.name = 'ContextChangedError';
  }
}

/** The context's `.dockerignore`, read with no link followed; undefined when there is none. */
function readIgnore(root: string): DockerIgnore | undefined {
  let r;
  try {
    r = readBoundedSync(path.join(root, '.dockerignore'), DEFAULTS.maxDockerfileBytes, true);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (r.kind !== 'read') throw new ContextChangedError(root);
  const parsed = parseDockerignore(r.bytes.toString('utf8'));
  if (!parsed.ok) throw new ContextChangedError(root);
  return parsed.ignore;
}

/** The tar stream of `b`'s context; it fails (destroyed with the error) if what it read is not the context `b` was loaded from. */
export function contextTar(b: NormalizedBuild): Readable {
  const p = pack();
  void packContext(p, b).then(
    () => p.finalize(),
    (err: unknown) => p.destroy(err instanceof Error ? err : new Error(String(err))),
  );
  return p as unknown as Readable;
}

async function packContext(p: Pack, b: NormalizedBuild): Promise<void> {
  const root = b.context;
  const filter = contextFilter(readIgnore(root), b.dockerfile);
  const read: FixtureEntry[] = [];
  const own = { uid: 0, gid: 0 };
  await walkTree<Stats>(
    root,
    { slicer: new Slicer(SLICE_MS), ...(filter ? { prune: (e) => !filter.enter(e.rel) } : {}) },
    async ({ dir, name, rel, abs, depth, st }) => {
      if (depth > 0 && filter && !filter.keep(rel)) return;
      if (depth === 0) {
        if (!st.isDirectory()) throw new UnsafePathError(`build context ${root} is not a folder`);
        read.push({ path: '.', type: 'dir', mode: st.mode & 0o777, size: 0 });
        return;
      }
      if (st.isDirectory()) {
        read.push({ path: rel, type: 'dir', mode: st.mode & 0o777, size: 0 });
        await tarEntry(p, { name: `${rel}/`, type: 'directory', mode: st.mode & 0o7777, mtime: st.mtime, ...own });
      } else if (st.isFile()) {
        const small = readFileAtSync(dir, name, abs, DEFAULTS.fixtureInlineFileBytes);
        if (small) {
          const { st: fst, body } = small;
          await tarEntry(p, { name: rel, type: 'file', mode: fst.mode & 0o7777, mtime: fst.mtime, ...own, size: body.length }, body);
          read.push({ path: rel, type: 'file', mode: fst.mode & 0o777, size: body.length, sha256: createHash('sha256').update(body).digest('hex') });
          return;
        }
        const fh = await openFileAt(dir, name, abs);
        try {
          const fst = await fh.stat();
          const got = await tarFileEntry(p, { name: rel, type: 'file', mode: fst.mode & 0o7777, mtime: fst.mtime, ...own }, fh, fst.size);
          read.push({ path: rel, type: 'file', mode: fst.mode & 0o777, ...got });
        } finally {
          await fh.close();
        }
      } else if (st.isSymbolicLink()) {
        const target = await fsp.readlink(atFd(dir, name));
        const lands = path.posix.join(path.posix.dirname(rel), target);
        if (path.posix.isAbsolute(target) || lands === '..' || lands.startsWith('../'))
          throw new UnsafePathError(`build context link ${abs} points outside the build context (to ${JSON.stringify(target)})`);
        read.push({ path: rel, type: 'symlink', mode: st.mode & 0o777, size: 0, target });
        await tarEntry(p, { name: rel, type: 'symlink', linkname: target, mode: st.mode & 0o7777, mtime: st.mtime, ...own });
      } else {
        throw new UnsafePathError(`build context entry ${abs} is not a file, folder or link`);
      }
    },
  );
  const hash = buildHash({ contextDigest: fixtureDigest(read), dockerfile: b.dockerfile, args: b.args, target: b.target, network: b.network });
  if (hash !== b.hash) throw new ContextChangedError(root);
}
