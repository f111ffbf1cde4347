/**
 * The workspace comes home (docs/CONTRACT.md): after the main container exits, and before
 * anything removes it, the harvest reads `workingDir` out of the stopped container through the
 * engine's archive API (nothing runs in it) and writes `run-<n>/workspace/`: changes.json,
 * changes.patch and files/ (src/workspace/types.ts).
 *
 * What it is compared with: `run-<n>/workspace-base.json`, berth's own record beside results/,
 * written when the run begins (the spec's settings) and again when the fixture is copied in
 * (every entry copied: path, type, mode, size, sha256, link target). A fixture changed on the
 * host since (its spec hash changes, the run is replaced) does not change what this run's export
 * compares with; old bytes for the patch are read from the host fixture only while the file's
 * sha256 still matches the record.
 *
 * Crash-safe and exactly once: built in a temp folder beside `workspace/` (changes.json written
 * last in it), then renamed into place. A harvest tried again finds a complete export and leaves
 * it, and removes a half-made temp folder of an earlier try.
 *
 * A run with secrets: every file written under files/ is scanned for their values as it is
 * hashed; one that holds any is flagged in changes.json (`secrets`) and named in the patch
 * without its content (as a binary file is), so the patch holds no value; files/ keeps the bytes
 * as the attempt wrote them. changes.json itself is redacted (a path that holds a value).
 */
import { hash, randomBytes } from 'node:crypto';
import { lstatSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, WORKSPACE } from '../constants';
import { isNotFound } from '../engine/errors';
import type { Engine } from '../engine/types';
import type { FixtureEntry } from '../spec/fixture-scan';
import type { WorkspaceExportSpec } from '../spec/types';
import { isCode, readJsonFile, syncDir, writeFileAtomic } from '../status/atomic-file';
import { SyncFolders } from '../util/no-follow';
import { runBounded } from '../util/pool';
import type { Redactor } from '../util/redact';
import { gitIgnoreDir, gitIgnorer, type GitIgnoreFile } from './gitignore';
import { collectChanges, type Collected } from './tar';
import { prepareSection, writePatch, type PatchFile, type PreparedSection } from './patch';
import type { ChangedEntry, WorkspaceChanges } from './types';

/** berth's record of what a run's export compares with (`run-<n>/workspace-base.json`). */
export interface WorkspaceBase {
  version: 1;
  workingDir: string;
  /** The spec's settings when the run began (`gitignore` absent: a run begun before it existed, which reads true). */
  settings: Omit<WorkspaceExportSpec, 'gitignore'> & { gitignore?: boolean };
  /** The fixture's real path on the host (its first layer's), or null. */
  fixture: string | null;
  fixtureDigest: string | null;
  /** A fixture of more than one layer: each layer's real path, in order (an entry's `layer` indexes it). */
  layers?: string[];
  /** The fixture was copied in (entries hold what was). */
  copied: boolean;
  entries: (FixtureEntry & { layer?: number })[];
}

/** Records what the export will compare with (atomic; a later write for the same run replaces it). */
export async function writeWorkspaceBase(runDir: string, base: WorkspaceBase): Promise<void> {
  await writeFileAtomic(path.join(runDir, WORKSPACE.base), JSON.stringify(base) + '\n');
}

/** What the export did, for the status record: a warning when it could not be made. */
export type ExportResult = { done: true; truncated: boolean } | { done: false; warning?: string };

/**
 * Exports the workspace of the run whose folder is `runDir` (already made or found with no link
 * followed), read from container `containerId`. Nothing to do without a record of the run's
 * base (a run begun before the export existed, or `export: none`) or when an export is already
 * complete. A container that is gone is a warning, never a failure (the harvest would fail
 * forever).
 */
export async function exportWorkspace(
  engine: Engine,
  runDir: string,
  containerId: string | undefined,
  signal?: AbortSignal,
  redactor?: Redactor,
): Promise<ExportResult> {
  const base = await readJsonFile<WorkspaceBase>(path.join(runDir, WORKSPACE.base));
  if (!base || base.settings.export === 'none') return { done: false };
  const final = path.join(runDir, WORKSPACE.dir);
  await removeTemps(runDir);
  if (await complete(final)) return { done: true, truncated: false };
  if (base.fixture !== null && !base.copied) return { done: false, warning: 'the workspace was not exported: the fixture was never copied in' };
  const get = engine.containers.getArchive.bind(engine.containers);
  if (!containerId) return { done: false, warning: 'the workspace was not exported: the container was gone before the harvest' };
  let tar;
  try {
    tar = await get(containerId, base.workingDir);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    return { done: false, warning: `the workspace was not exported: the container or ${base.workingDir} in it was gone before the harvest` };
  }
  const temp = path.join(runDir, `${WORKSPACE.tempPrefix}${process.pid}-${randomBytes(6).toString('hex')}`);
  await fsp.mkdir(temp, { mode: 0o755 });
  try {
    const filesDir = path.join(temp, WORKSPACE.files);
    await fsp.mkdir(filesDir, { mode: 0o755 });
    const index = base.fixture === null ? null : new Map(base.entries.map((e) => [e.path, e]));
    // the fixture's side of the patch is read synchronously, the folders on the way kept open (hundreds of small files)
    const folders = new SyncFolders();
    let got: Collected;
    let binary: Set<string>;
    try {
      // a file read whole gets its patch section now, while the engine still sends the archive (its bytes in hand, not read back from files/)
      const prepared = new Map<string, PreparedSection>();
      let preparedChars = 0;
      const onHeld = (e: ChangedEntry, from: FixtureEntry | undefined, bytes: Buffer): void => {
        const c = newSide(e, from);
        if (!c || preparedChars >= PREPARED_CHARS) return;
        const p = prepareSection(c, {
          oldText: !c.content ? undefined : c.oldMode === undefined ? Buffer.alloc(0) : fixtureBytes(base, from, folders),
          newText: !c.content || e.secrets || bytes.length > DEFAULTS.workspaceTextDiffBytes ? undefined : bytes,
        });
        preparedChars += p.section?.length ?? 0;
        prepared.set(e.path, p);
      };
      const gitignored = base.settings.gitignore === false ? undefined : gitIgnorer(fixtureGitIgnores(base, folders));
      got = await collectChanges(tar, path.posix.basename(base.workingDir), {
        index,
        exclude: base.settings.exclude,
        ...(gitignored ? { gitignored } : {}),
        maxBytes: base.settings.maxBytes,
        maxFiles: base.settings.maxFiles,
        filesDir,
        onHeld,
        ...(signal ? { signal } : {}),
        ...(redactor && !redactor.empty ? { redactor } : {}),
      });
      binary = await patchOf(temp, filesDir, base, got, index, folders, prepared);
    } finally {
      folders.close();
    }
    const flagged = [...got.added, ...got.modified, ...got.typeChanged].filter((e) => e.secrets);
    // a file its owner may not read gets its mode once read for the patch (every other has it)
    const modes = await runBounded(got.modeLater, 16, (w) => fsp.chmod(path.join(filesDir, w.path), w.mode));
    for (const m of modes) if (m.status === 'rejected') throw m.reason;
    const mark = <T extends { path: string; type: string }>(e: T): T => (binary.has(e.path) && e.type === 'file' ? { ...e, binary: true } : e);
    const changes: WorkspaceChanges = {
      version: 1,
      workingDir: base.workingDir,
      fixtureDigest: base.fixture === null ? null : base.fixtureDigest,
      added: got.added.map(mark),
      modified: got.modified.map(mark),
      deleted: got.deleted,
      typeChanged: got.typeChanged.map(mark),
      omitted: got.omitted,
      truncated: got.truncated,
      caps: { maxBytes: base.settings.maxBytes, maxFiles: base.settings.maxFiles },
      ...(redactor && !redactor.empty ? { secretScan: { secrets: redactor.secretNames, filesWithSecrets: flagged.length } } : {}),
      exportedAt: new Date().toISOString(),
    };
    await writeFileAtomic(path.join(temp, WORKSPACE.changes), JSON.stringify(redactor ? redactor.redactJson(changes) : changes, null, 2) + '\n');
    // A folder left by an interrupted rename's predecessor (never complete: checked above).
    await fsp.rm(final, { recursive: true, force: true });
    await fsp.rename(temp, final);
    await syncDir(runDir);
    return { done: true, truncated: got.truncated };
  } finally {
    await fsp.rm(temp, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** An export is complete when its folder holds changes.json (written last, before the rename). */
async function complete(final: string): Promise<boolean> {
  const [dir, changes] = await Promise.all([fsp.lstat(final).catch(() => undefined), fsp.lstat(path.join(final, WORKSPACE.changes)).catch(() => undefined)]);
  return !!dir?.isDirectory() && !!changes?.isFile();
}

/** Removes what an interrupted export left: its temp folders. */
async function removeTemps(runDir: string): Promise<void> {
  let names: string[];
  try {
    names = await fsp.readdir(runDir);
  } catch (err) {
    if (isCode(err, 'ENOENT')) return;
    throw err;
  }
  for (const n of names) if (n.startsWith(WORKSPACE.tempPrefix)) await fsp.rm(path.join(runDir, n), { recursive: true, force: true });
}

/** Whether `p` is a file (not followed if a link). */
function isFile(p: string): boolean {
  try {
    return lstatSync(p).isFile();
  } catch {
    return false;
  }
}

/** Of the patch's sections: how many characters are made ahead (while the archive is read) at most; the rest are made after it. */
const PREPARED_CHARS = 8 * 1024 * 1024;

/** The patch's change for file `e`'s new side (added, modified, or now a file), as patchOf lists it; undefined for anything else. */
function newSide(e: ChangedEntry, from: FixtureEntry | undefined): PatchFile | undefined {
  if (e.type !== 'file') return undefined;
  const newMode = e.mode ?? 0o644;
  if (from?.type === 'file') return { path: e.path, oldMode: from.mode, newMode, content: from.sha256 !== e.sha256 };
  return { path: e.path, newMode, content: true };
}

/** Writes changes.patch into `temp`; returns the paths whose content is not text. `prepared`: sections made while the archive was read. */
async function patchOf(
  temp: string,
  filesDir: string,
  base: WorkspaceBase,
  got: Collected,
  index: ReadonlyMap<string, FixtureEntry> | null,
  folders: SyncFolders,
  prepared: ReadonlyMap<string, PreparedSection>,
): Promise<Set<string>> {
  const changes: PatchFile[] = [];
  // a file that holds a secret's value is named, never diffed: the patch holds no value
  const secret = new Set([...got.added, ...got.modified, ...got.typeChanged].filter((e) => e.secrets).map((e) => e.path));
  for (const e of got.added) {
    const c = newSide(e, undefined);
    if (c) changes.push(c);
  }
  for (const e of got.modified) {
    const was = index?.get(e.path);
    const c = was && newSide(e, was);
    if (c) changes.push(c);
  }
  for (const e of got.typeChanged) {
    const was = index?.get(e.path);
    if (was?.type === 'file') changes.push({ path: e.path, oldMode: was.mode, content: true });
    const c = newSide(e, was);
    if (c) changes.push(c);
  }
  for (const e of got.deleted) {
    const was = index?.get(e.path);
    if (was?.type === 'file') changes.push({ path: e.path, oldMode: was.mode, content: true });
  }
  const out = await fsp.open(path.join(temp, WORKSPACE.patch), 'wx', 0o644);
  try {
    return await writePatch(
      out,
      path.join(temp, '.patch-body'),
      changes,
      {
        before: async (p) => fixtureBytes(base, index?.get(p), folders),
        after: async (p) => (secret.has(p) ? undefined : folders.read(filesDir, p, DEFAULTS.workspaceTextDiffBytes)?.body),
      },
      prepared,
    );
  } finally {
    await out.close();
  }
}

/**
 * A fixture file's bytes as copied in: read from the host (no link followed) only while its
 * sha256 is still the one recorded. With layers, from the layer the entry came from: a folder
 * layer holds it at its path, a single-file layer is the file.
 */
/**
 * The fixture's `.gitignore` files as copied in (gitignore.ts): each one the record names, read from
 * the host only while its sha256 is the one recorded (one changed since is not read: the export
 * leaves out no more than it did then), at most DEFAULTS.workspaceTextDiffBytes each.
 */
function fixtureGitIgnores(base: WorkspaceBase, folders: SyncFolders): GitIgnoreFile[] {
  const out: GitIgnoreFile[] = [];
  for (const e of base.entries) {
    const dir = e.type === 'file' ? gitIgnoreDir(e.path) : undefined;
    if (dir === undefined) continue;
    const bytes = fixtureBytes(base, e, folders);
    if (bytes) out.push({ dir, text: bytes.toString('utf8') });
  }
  return out;
}

function fixtureBytes(base: WorkspaceBase, e: (FixtureEntry & { layer?: number }) | undefined, folders: SyncFolders): Buffer | undefined {
  if (!base.fixture || e?.type !== 'file' || e.sha256 === undefined) return undefined;
  const root = base.layers ? base.layers[e.layer ?? -1] : base.fixture;
  if (root === undefined) return undefined;
  // a single-file fixture (or layer): its entry is the file's own name, at the top
  const single = base.layers ? !e.path.includes('/') && isFile(root) : base.entries.length === 1 && base.entries[0]?.type === 'file';
  let b;
  try {
    b = single
      ? folders.read(path.dirname(root), path.basename(root), DEFAULTS.workspaceTextDiffBytes)
      : folders.read(root, e.path, DEFAULTS.workspaceTextDiffBytes);
  } catch {
    return undefined; // gone or replaced on the host since: named, not diffed
  }
  if (!b || hash('sha256', b.body) !== e.sha256) return undefined;
  return b.body;
}
