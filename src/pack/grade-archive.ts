/**
 * The grader's archive (spec.grade): one tar to extract at `/`, landing in workingDir, made of,
 * in this order, spec.fixture (as the attempt got it: its layers in order), the run's exported changes
 * (`run-<n>/workspace/`: `deleted` applied, files from `files/`, links from their targets) less
 * every path `protect` matches (those keep the fixture's content: a protected path the attempt
 * added is dropped, one it deleted is kept), then grade.fixture over all. The tree is composed
 * first (paths and where each comes from: no bytes held), then packed as the engine reads it,
 * each file read only then, with no link followed. With the fixture cache (fixture-cache.ts), the
 * fixture comes from its packed layers, as the attempt's copy did: every entry of them the tree
 * still holds is copied as packed (header and bytes, in ranges), and only the rest (the changes,
 * the grade fixture, folders made on their way) is packed after them.
 *
 * Everything the export lists was named by the attempt: a path that is absolute, empty, holds
 * `.` or `..` or NUL, lies under a link, or a link whose target leaves workingDir, is left out
 * (and noted), never written.
 */
import { promises as fsp, readlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import picomatch from 'picomatch';
import { pack, type Pack } from 'tar-stream';
import { DEFAULTS } from '../constants';
import type { FixtureLayer } from '../spec/types';
import { isCode } from '../status/atomic-file';
import { atFd, componentsBelow, openDirBelow, openFileAt, openFileBelow, SyncFolders, UnsafePathError } from '../util/no-follow';
import { Slicer } from '../util/slicer';
import { walkTree } from '../util/tree-walk';
import { leaseLayers, rangeBytes, workingDirTar, type FixtureCacheConfig, type LeasedLayers, type Range } from './archive';
import type { LayerMeta } from './fixture-cache';
import { overlay } from './fixture-layers';
import type { ChangedEntry, WorkspaceChanges } from '../workspace/types';

type Source = { from: 'tree'; root: string; rel: string } | { from: 'files'; root: string; rel: string };

/** One entry of the composed tree, relative to workingDir. */
interface Node {
  type: 'dir' | 'file' | 'link';
  /** Permission bits. */
  mode: number;
  /** Files: where their bytes are read. */
  src?: Source;
  /** Links: their target. */
  target?: string;
  /** An entry of a packed fixture layer (the layer's index in the fixture, the entry's bytes in its archive): copied as packed. */
  span?: { layer: number; start: number; end: number };
}

/** What the grader was given, for its grade record. */
export interface GradeInput {
  /** Packs the archive (again at each call: a copy tried again gets it whole). */
  pack(): PackedInput;
  workspace: 'exported' | 'truncated' | 'missing';
  /** Changes left out (protected, unsafe), in words; at most MAX_NOTES, then a count. */
  notes: string[];
  /** Closes what the packing reads (the packed layers); after the last pack() has settled. */
  dispose(): Promise<void>;
}

const MAX_NOTES = 20;
/** Bytes of changes.json read at most (it lists at most maxFiles entries). */
const MAX_CHANGES_BYTES = 64 * 1024 * 1024;

/** A path the export names, as a list of safe components; undefined when it is not one. */
export function safeParts(p: unknown): string[] | undefined {
  if (typeof p !== 'string' || p === '' || p.includes('\0') || p.startsWith('/')) return undefined;
  const parts = p.split('/');
  if (parts.some((x) => x === '' || x === '.' || x === '..')) return undefined;
  return parts;
}

/** Whether link `rel` (components) with `target` stays inside workingDir, read lexically. */
export function linkStaysInside(parts: readonly string[], target: string): boolean {
  if (target === '' || target.includes('\0') || path.posix.isAbsolute(target)) return false;
  const lands = path.posix.normalize(path.posix.join(...parts.slice(0, -1), target));
  return lands !== '..' && !lands.startsWith('../') && lands !== '.';
}

/** The tree under a fixture (folder or single file), walked with no link followed (util/tree-walk.ts): path → node. */
async function scanTree(root: string, into: Map<string, Node>): Promise<void> {
  await walkTree<Stats>(root, { slicer: new Slicer(PACK_SLICE_MS) }, ({ dir, name, rel, abs, depth, st }) => {
    const mode = st.mode & 0o7777;
    if (depth === 0) {
      if (st.isSymbolicLink()) throw new UnsafePathError(`fixture ${root} is a symbolic link; berth never follows one there`);
      if (st.isFile()) into.set(name, { type: 'file', mode, src: { from: 'tree', root: path.dirname(root), rel: name } });
      else if (!st.isDirectory()) throw new UnsafePathError(`fixture ${root} is not a file, folder or link`);
      return;
    }
    if (st.isDirectory()) into.set(rel, { type: 'dir', mode });
    else if (st.isFile()) into.set(rel, { type: 'file', mode, src: { from: 'tree', root, rel } });
    else if (st.isSymbolicLink()) {
      const target = readlinkSync(atFd(dir, name));
      if (!linkStaysInside(rel.split('/'), target)) throw new UnsafePathError(`fixture link ${abs} points outside the fixture`);
      into.set(rel, { type: 'link', mode, target });
    } else throw new UnsafePathError(`fixture entry ${abs} is not a file, folder or link`);
  });
}

/** The tree of packed layer `layer` (its meta: fixture-cache.ts): path → node, each with its entry's span. */
export function packedTree(meta: Pick<LayerMeta, 'index' | 'entries'>, layer: number): Map<string, Node> {
  const index = new Map(meta.index.map((e) => [e.path, e]));
  const out = new Map<string, Node>();
  for (const e of meta.entries) {
    const i = index.get(e.path);
    if (!i || i.type !== e.type) throw new Error(`a packed fixture layer lists ${e.path} unlike its index`);
    const span = { layer, start: e.start, end: e.end };
    if (i.type === 'symlink') out.set(e.path, { type: 'link', mode: i.mode, target: i.target as string, span });
    else out.set(e.path, { type: i.type, mode: i.mode, span });
  }
  return out;
}

/** The run's changes.json, read bounded and with no link followed; undefined when the run has none. */
export async function readChanges(runDir: string): Promise<WorkspaceChanges | undefined> {
  let fh: fsp.FileHandle;
  try {
    fh = await openFileBelow(runDir, 'workspace/changes.json');
  } catch (err) {
    if (isCode(err, 'ENOENT')) return undefined;
    throw err;
  }
  try {
    const st = await fh.stat();
    if (st.size > MAX_CHANGES_BYTES) throw new Error(`workspace/changes.json is ${st.size} bytes, more than ${MAX_CHANGES_BYTES}`);
    const v = JSON.parse(await fh.readFile('utf8')) as WorkspaceChanges;
    if (typeof v !== 'object' || v === null || v.version !== 1) throw new Error('workspace/changes.json is not a version 1 export');
    return v;
  } finally {
    await fh.close();
  }
}

const under = (p: string, dir: string): boolean => p.startsWith(`${dir}/`);

/** Whether an ancestor of `parts` in the tree is not a folder (a change under a link is never written through it). */
function underNonDir(tree: Map<string, Node>, parts: readonly string[]): boolean {
  for (let i = 1; i < parts.length; i++) {
    const n = tree.get(parts.slice(0, i).join('/'));
    if (n && n.type !== 'dir') return true;
  }
  return false;
}

/** Folders for every missing ancestor of `parts`. */
function ensureParents(tree: Map<string, Node>, parts: readonly string[]): void {
  for (let i = 1; i < parts.length; i++) {
    const p = parts.slice(0, i).join('/');
    if (!tree.has(p)) tree.set(p, { type: 'dir', mode: 0o755 });
  }
}

/**
 * The tree the grader gets (pure but for the fixture scans it is given): `fixture` (spec.fixture's
 * tree), the changes less `protect`, `gradeFixture` over all. `filesRoot`: the export's `files/`.
 */
export function compose(
  fixture: Map<string, Node>,
  changes: WorkspaceChanges | undefined,
  protect: readonly string[],
  gradeFixture: Map<string, Node> | undefined,
  filesRoot: string,
): { tree: Map<string, Node>; notes: string[] } {
  const tree = new Map(fixture);
  const notes: string[] = [];
  let more = 0;
  const note = (s: string) => (notes.length < MAX_NOTES ? notes.push(s) : more++);
  const isProtected = protect.length ? picomatch([...protect], { dot: true }) : () => false;
  // a path is protected when it matches, or holds a protected path of the fixture (a folder replaced or deleted whole)
  const protectedFixture = protect.length ? [...fixture.keys()].filter((f) => isProtected(f)) : [];
  const guarded = (p: string): boolean => isProtected(p) || protectedFixture.some((f) => under(f, p));
  // what lay below `p` leaves the tree (only a folder has anything below it)
  const dropBelow = (p: string, keep?: (k: string) => boolean): void => {
    if (tree.get(p)?.type !== 'dir') return;
    for (const k of [...tree.keys()]) if (under(k, p) && !keep?.(k)) tree.delete(k);
  };
  if (changes) {
    for (const d of Array.isArray(changes.deleted) ? changes.deleted : []) {
      const parts = safeParts(d?.path);
      if (!parts) {
        note(`deleted ${JSON.stringify(String(d?.path))}: not a safe relative path; left out`);
        continue;
      }
      const p = parts.join('/');
      if (isProtected(p)) {
        note(`deleted ${p}: protected, kept`);
        continue;
      }
      const kept = protectedFixture.filter((f) => under(f, p) && tree.has(f));
      for (const k of kept) note(`deleted ${k}: protected, kept`);
      dropBelow(p, (k) => kept.includes(k));
      tree.delete(p);
      // what a protected path kept needs its folders
      for (const k of kept) ensureParents(tree, k.split('/'));
    }
    const written: ChangedEntry[] = [
      ...(Array.isArray(changes.added) ? changes.added : []),
      ...(Array.isArray(changes.modified) ? changes.modified : []),
      ...(Array.isArray(changes.typeChanged) ? changes.typeChanged : []),
    ];
    // parents before children, whatever order the export lists them in
    written.sort((a, b) => (String(a?.path) < String(b?.path) ? -1 : String(a?.path) > String(b?.path) ? 1 : 0));
    for (const e of written) {
      const parts = safeParts(e?.path);
      if (!parts) {
        note(`${JSON.stringify(String(e?.path))}: not a safe relative path; left out`);
        continue;
      }
      const p = parts.join('/');
      if (guarded(p)) {
        note(`${p}: protected, the fixture's kept`);
        continue;
      }
      if (underNonDir(tree, parts)) {
        note(`${p}: lies under a link or a file; left out`);
        continue;
      }
      const mode = typeof e.mode === 'number' ? e.mode & 0o7777 : undefined;
      if (e.type === 'dir') {
        tree.set(p, { type: 'dir', mode: mode ?? 0o755 });
      } else if (e.type === 'file') {
        dropBelow(p);
        tree.set(p, { type: 'file', mode: mode ?? 0o644, src: { from: 'files', root: filesRoot, rel: p } });
      } else if (e.type === 'link') {
        if (typeof e.target !== 'string' || !linkStaysInside(parts, e.target)) {
          note(`${p}: a link leaving the working folder; left out`);
          continue;
        }
        dropBelow(p);
        tree.set(p, { type: 'link', mode: 0o777, target: e.target });
      } else {
        note(`${p}: of no known type; left out`);
        continue;
      }
      ensureParents(tree, parts);
    }
  }
  if (gradeFixture) {
    for (const [p, n] of gradeFixture) {
      const parts = p.split('/');
      if (n.type !== 'dir') dropBelow(p);
      // the grade fixture wins over whatever the attempt made on its way (a file or link where it has a folder)
      for (let i = 1; i < parts.length; i++) {
        const a = parts.slice(0, i).join('/');
        const at = tree.get(a);
        if (at && at.type !== 'dir') tree.set(a, { type: 'dir', mode: 0o755 });
      }
      ensureParents(tree, parts);
      tree.set(p, n);
    }
  }
  if (more) notes.push(`and ${more} more`);
  return { tree, notes };
}

function entry(p: Pack, header: Parameters<Pack['entry']>[0], body?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const cb = (err?: Error | null) => (err ? reject(err) : resolve());
    if (body !== undefined) p.entry(header, body, cb);
    else p.entry(header, cb);
  });
}

/**
 * The folders files are read from, found with no link followed. Small files are read
 * synchronously (SyncFolders: the folders on the way kept open); a larger one is opened and
 * streamed, the last folder of those kept open (the tree is packed in path order: a folder's
 * files come together).
 */
class Folders {
  private last: { root: string; rel: string; h: fsp.FileHandle } | undefined;
  private readonly small = new SyncFolders();

  /** `src`'s bytes when it is at most `max` bytes; undefined when larger (then open() it). */
  readSmall(src: Source, max: number): Buffer | undefined {
    return this.small.read(src.root, src.rel, max)?.body;
  }

  /** `src` opened for reading, no link followed below its root. */
  async open(src: Source): Promise<fsp.FileHandle> {
    const parts = componentsBelow(src.root, path.resolve(src.root, src.rel));
    const name = parts.pop();
    if (name === undefined) throw new UnsafePathError(`${src.root} is not a file`);
    const rel = parts.join('/');
    if (this.last?.root !== src.root || this.last.rel !== rel) {
      await this.close();
      this.last = { root: src.root, rel, h: await openDirBelow(src.root, parts) };
    }
    return openFileAt(this.last.h, name, path.join(src.root, src.rel));
  }

  async close(): Promise<void> {
    this.small.close();
    const h = this.last?.h;
    this.last = undefined;
    await h?.close();
  }
}

/** An error reading `src`, as the reason the grader cannot be given its archive. */
function unreadable(src: Source, err: unknown): UnsafePathError {
  if (err instanceof UnsafePathError) return err;
  return new UnsafePathError(`${path.join(src.root, src.rel)}: ${err instanceof Error ? err.message : String(err)}`);
}

async function fileBody(p: Pack, header: Parameters<Pack['entry']>[0], src: Source, folders: Folders): Promise<void> {
  let body: Buffer | undefined;
  try {
    body = folders.readSmall(src, DEFAULTS.fixtureInlineFileBytes);
  } catch (err) {
    throw unreadable(src, err);
  }
  if (body) {
    await entry(p, { ...header, size: body.length }, body);
    return;
  }
  const fh = await folders.open(src).catch((err: unknown) => {
    throw unreadable(src, err);
  });
  try {
    const st = await fh.stat();
    await new Promise<void>((resolve, reject) => {
      const sink = p.entry({ ...header, size: st.size }, (err?: Error | null) => (err ? reject(err) : resolve()));
      fh.createReadStream({ start: 0, end: st.size - 1, autoClose: false })
        .on('error', reject)
        .pipe(sink);
    });
  } finally {
    await fh.close();
  }
}

/**
 * The grader's archive as it is packed: `body` streams the tar while the files are read (the
 * engine extracts while berth reads: no temp file, and memory bounded by the stream's buffer);
 * `done` settles when the packing ends, rejected with why it could not go on (a path that is
 * no longer safe to read: the body then ends with that error, and the grader must not start);
 * `stop()` ends the packing early for a reader that gave up (what is still packed is read to
 * nowhere, so no entry is left half-written).
 */
export interface PackedInput {
  body: Readable;
  done: Promise<void>;
  stop(): void;
}

/** The longest the packing holds the event loop at once (reading small files synchronously). */
const PACK_SLICE_MS = 10;

/** The size of the chunks the packed archive is sent in. */
const BODY_CHUNK_BYTES = 256 * 1024;

/** `src`'s bytes in chunks of at least `size` (the last one smaller). */
async function* coalesced(src: AsyncIterable<Buffer>, size: number): AsyncGenerator<Buffer> {
  let held: Buffer[] = [];
  let bytes = 0;
  for await (const c of src) {
    held.push(c);
    bytes += c.length;
    if (bytes < size) continue;
    yield Buffer.concat(held, bytes);
    held = [];
    bytes = 0;
  }
  if (bytes) yield Buffer.concat(held, bytes);
}

/** The packed layers' entries `tree` still holds, as ranges of their archives: in layer order, each layer's in its archive's order, adjacent ones joined. */
function spanRanges(tree: ReadonlyMap<string, Node>, layers: readonly fsp.FileHandle[]): Range[] {
  const spans = [...tree.values()].flatMap((n) => (n.span ? [n.span] : [])).sort((a, b) => a.layer - b.layer || a.start - b.start);
  const out: (Range & { layer: number })[] = [];
  for (const sp of spans) {
    const file = layers[sp.layer];
    if (!file) throw new Error(`no packed fixture layer ${sp.layer}`);
    const last = out[out.length - 1];
    if (last && last.layer === sp.layer && last.end === sp.start) last.end = sp.end;
    else out.push({ file, layer: sp.layer, start: sp.start, end: sp.end });
  }
  return out;
}

/**
 * Packs `tree` into a tar landing in `workingDir`, owned by `uid:gid`, as it is read: the folders
 * down to workingDir, the entries of packed layers (`layers`: open archives) the tree holds copied
 * as they are, then every other entry packed in path order. A folder whose entry comes later (the
 * attempt changed it) may have entries below it before: extraction makes it, and its own entry
 * then sets its mode and owner.
 */
function packTree(tree: Map<string, Node>, workingDir: string, uid: number, gid: number, layers: readonly fsp.FileHandle[] = []): PackedInput {
  const p = pack();
  const ranges = spanRanges(tree, layers);
  let stopped = false;
  // the packed layers' ranges read: settled once they all were, or with why they could not be (or when the body is gone)
  let rangesRead!: { resolve: () => void; reject: (err: unknown) => void };
  const rangesDone = new Promise<void>((resolve, reject) => (rangesRead = { resolve, reject }));
  async function* parts(): AsyncGenerator<Buffer> {
    try {
      yield await workingDirTar(workingDir, uid, gid);
      // a range that cannot be read is why the packing failed; an end thrown in by the body's reader (it gave up) is not
      const read = rangeBytes(ranges);
      for (;;) {
        let next: IteratorResult<Buffer>;
        try {
          next = await read.next();
        } catch (err) {
          rangesRead.reject(err);
          throw err;
        }
        if (next.done) break;
        yield next.value;
      }
      rangesRead.resolve();
      // tar-stream's pack is a streamx stream: pulled (its back-pressure kept), in chunks of
      // BODY_CHUNK_BYTES (the pack's own are a 512-byte header, a body, its padding)
      yield* coalesced(p as AsyncIterable<Buffer>, BODY_CHUNK_BYTES);
    } finally {
      // ended early (a reader gone, a range unreadable): the packing below ends too
      rangesRead.resolve();
      p.destroy();
    }
  }
  const body = Readable.from(parts(), { objectMode: false });
  // a body destroyed before it was first read never runs parts(): the packing ends all the same
  body.once('close', () => {
    rangesRead.resolve();
    p.destroy();
  });
  const folders = new Folders();
  const packed = (async () => {
    try {
      const own = { uid, gid };
      const base = workingDir.replace(/^\/+/, '');
      // small files are read synchronously: the event loop gets a turn every few ms
      const slicer = new Slicer(PACK_SLICE_MS);
      // what the packed layers do not hold (copied as packed, before)
      const rest = [...tree].filter(([, n]) => !n.span).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      for (const [k, n] of rest) {
        await slicer.tick();
        if (stopped) break;
        const name = `${base}/${k}`;
        if (n.type === 'dir') await entry(p, { name: name + '/', type: 'directory', mode: n.mode, ...own });
        else if (n.type === 'link') await entry(p, { name, type: 'symlink', linkname: n.target as string, mode: n.mode, ...own });
        else await fileBody(p, { name, type: 'file', mode: n.mode, ...own }, n.src as Source, folders);
      }
      p.finalize();
    } catch (err) {
      // the reader gave up (and ended the pack): whatever this is, the copy's own error says why
      if (stopped || body.destroyed) return;
      // no entry is in flight here (each is awaited): the pack ends with the error, and so does the body
      p.destroy(err as Error);
      throw err;
    } finally {
      await folders.close().catch(() => undefined);
    }
  })();
  const done = Promise.allSettled([rangesDone, packed]).then(([r, k]) => {
    if (r.status === 'rejected') throw r.reason;
    if (k.status === 'rejected') throw k.reason;
  });
  return {
    body,
    done,
    stop() {
      stopped = true;
      body.resume();
    },
  };
}

/**
 * The grader's archive for the run in `runDir`: spec.fixture, the exported changes less
 * `protect`, grade.fixture; with what it was given.
 */
export async function graderArchive(g: {
  runDir: string;
  /** spec.fixture's layers, in order (none: no fixture). */
  fixture: readonly string[];
  /** The same layers with their digests, and the fixture cache: the fixture is then read from its packed layers (packed now if the cache lacks one). */
  packed?: { layers: readonly FixtureLayer[]; cache: FixtureCacheConfig };
  gradeFixture: string | null;
  protect: readonly string[];
  workingDir: string;
  owner: { uid: number; gid: number } | null;
}): Promise<GradeInput> {
  const owner = g.owner ?? { uid: 0, gid: 0 };
  let leased: LeasedLayers | undefined;
  try {
    // the layers as the attempt got them: each over the ones before (fixture-layers.ts)
    const fixture = new Map<string, Node>();
    if (g.packed && g.packed.layers.length) {
      leased = await leaseLayers(g.packed.layers, g.workingDir, owner.uid, owner.gid, g.packed.cache);
      leased.leases.forEach((l, i) => overlay(fixture, packedTree(l.meta, i)));
    } else {
      for (const layer of g.fixture) {
        const tree = new Map<string, Node>();
        await scanTree(layer, tree);
        overlay(fixture, tree);
      }
    }
    let gradeFixture: Map<string, Node> | undefined;
    if (g.gradeFixture !== null) await scanTree(g.gradeFixture, (gradeFixture = new Map()));
    const changes = await readChanges(g.runDir);
    const { tree, notes } = compose(fixture, changes, g.protect, gradeFixture, path.join(g.runDir, 'workspace', 'files'));
    const files = leased?.leases.map((l) => l.file) ?? [];
    const dispose = leased?.dispose ?? (async () => undefined);
    return {
      pack: () => packTree(tree, g.workingDir, owner.uid, owner.gid, files),
      workspace: !changes ? 'missing' : changes.truncated ? 'truncated' : 'exported',
      notes,
      dispose,
    };
  } catch (err) {
    await leased?.dispose();
    throw err;
  }
}
