/**
 * Durable status records: `<state>/<instance>/attempts/<name>.json`, each written atomically
 * (temp file, fsync, rename, fsync the folder). Reads are served from memory after the first
 * load; the store is the only writer of these files.
 *
 * A damaged record (not JSON, truncated, or not a record of this attempt) affects only its
 * own attempt: it is reported (what is wrong, never its bytes) and read as missing, so the
 * planner rebuilds the attempt's state from the engine's labels as it does for a deleted
 * record. Before its first write, a store sets damaged records aside into
 * `<state>/<instance>/damaged/<name>.json.<time>` (kept for a person to read) and removes the
 * temp files of interrupted writes; the record written next for that attempt says it was
 * rebuilt. Readers never move files: only writers (who hold the instance's lock) do.
 *
 * The records folder itself may be damaged: a file, or a link to nothing, where the folder
 * should be. Readers then read no records (every attempt as if it had none) and say so once,
 * naming the path and what rebuilds it; a writer sets it aside as `damaged/attempts.<time>` and
 * starts a new folder, which the next pass fills from the engine. A state folder (or instance
 * folder) that is not a folder is a StateFolderError naming it (damaged.ts).
 */
import { ImagePins } from './pins';
import { RunSpecs } from './run-specs';
import { promises as fs, readdirSync } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, LEGACY_CHILD_NAME, SCHEMA_VERSIONS } from '../constants';
import { CorruptJsonError, isCode, readJsonFileSync, removeStaleTemps, writeFileAtomic } from './atomic-file';
import { checkStateFolder, folderProblem, setAside } from './damaged';
import type { AttemptStatus, AttestationCheck } from './types';
import { recordProblem, refuseNewer, upgradeRecord } from './validate';
import { joinName } from '../util/join-name';
import { mapChunked } from '../util/pool';
import { ContainerIndex } from './container-index';
import {
  folderStamp,
  INDEX_MIN_RECORDS,
  namesFileOf,
  RACY_MS,
  readIndex,
  readLegacyNames,
  sameStamp,
  writeIndex,
  writeLegacyNames,
  type IndexEntry,
} from './index-file';

/** The records folder, when it is not a folder (a file, a link to nothing). */
export interface DamagedFolder {
  /** The records folder's path. */
  file: string;
  /** What is wrong, in words. */
  problem: string;
  /** The error listing it gave (ENOTDIR, ENOENT, ELOOP). */
  code?: string;
  /** Where it was set aside, once it was. */
  keptAt?: string;
}

/** A record that could not be used. */
export interface DamagedRecord {
  /** The attempt the file is named for. */
  name: string;
  file: string;
  /** What is wrong, in words; never the file's content. */
  problem: string;
  /** Where it was set aside, once it was. */
  keptAt?: string;
}

export interface StoreOptions {
  /** Told about each damaged record found and each one set aside (a line for a person). */
  warn?: (message: string) => void;
  now?: () => number;
  /**
   * One copy of each string the records repeat (`shareStrings`): for a process that keeps its
   * records for long (the controller). A command's single pass does not (interning 1,000 records
   * cost ~10 ms of a cold `reconcile --once`, for memory it gives back at exit).
   */
  compact?: boolean;
  /**
   * Whether a read of a large, still folder writes its index (index-file.ts). Default: yes, but
   * not for a `compact` store (the controller's): its own next write makes the index stale (a
   * record's write renames a file into the folder), and at 100,000 records writing it took ~4 s of
   * the controller's start-up (issue 55); the commands that only read (`get`, `summary`) keep it.
   */
  keepIndex?: boolean;
  /** Records from which the folder's read keeps an index (index-file.ts; default INDEX_MIN_RECORDS; tests lower it). */
  indexMin?: number;
  /** How long the folder must have been still before a read that keeps an index (default RACY_MS; tests shorten it). */
  racyMs?: number;
}

type Read = { rec: AttemptStatus } | { problem: string } | undefined;

/**
 * One copy of each string many records repeat (JSON.parse makes a new string per value): the
 * instance, phase, reason, engine boot, and the attestation's check names and details, which
 * are the same for most finished attempts. At 10,000 records, ~10 MB of strings less in a
 * controller. Bounded: short strings only, and no new ones after `INTERN_MAX` distinct values.
 */
const INTERN_MAX = 20_000;
const interned = new Map<string, string>();
function intern(s: string): string;
function intern(s: string | undefined): string | undefined;
function intern(s: string | undefined): string | undefined {
  if (typeof s !== 'string' || s.length > 256) return s;
  const had = interned.get(s);
  if (had !== undefined) return had;
  if (interned.size < INTERN_MAX) interned.set(s, s);
  return s;
}

/**
 * One copy of each attestation check list many records repeat (a finished attempt's last
 * attestation: the same twelve checks, each passed, for most of a fleet): ~0.5 KB of objects a
 * record, ~50 MB at 100,000 (issue 55). A list is shared only when its checks are exactly those
 * of the one kept (`checksKey`), and kept frozen: a record is replaced whole when it changes (put()), never edited
 * in place, and a shared list that something tried to edit would throw rather than change the
 * others'. Bounded as the strings are.
 */
const SHARED_CHECKS_MAX = 1_000;
const sharedChecks = new Map<string, AttestationCheck[]>();

/**
 * A list's key: exactly its content when every check is a name, an ok and a detail (strings, a
 * boolean) and nothing else, which is what berth writes; undefined (not shared) for any other
 * shape. A fifth of a JSON.stringify's CPU at 100,000 records.
 */
function checksKey(checks: readonly unknown[]): string | undefined {
  let key = '';
  for (const c of checks) {
    if (typeof c !== 'object' || c === null) return undefined;
    const { name, ok, detail } = c as Partial<AttestationCheck>;
    if (typeof name !== 'string' || typeof ok !== 'boolean' || typeof detail !== 'string' || Object.keys(c).length !== 3) return undefined;
    key += `${name.length}:${name}${ok ? '+' : '-'}${detail.length}:${detail}`;
  }
  return key;
}

function shareStrings(rec: AttemptStatus): AttemptStatus {
  rec.instance = intern(rec.instance);
  rec.phase = intern(rec.phase) as AttemptStatus['phase'];
  if (typeof rec.reason === 'string') rec.reason = intern(rec.reason);
  // Only what is there is replaced, by the same value: a record keeps its exact content.
  const boot = rec.engineBoot as Partial<AttemptStatus['engineBoot']> | undefined;
  if (boot && typeof boot === 'object') {
    if (typeof boot.id === 'string') boot.id = intern(boot.id);
    if (typeof boot.at === 'string') boot.at = intern(boot.at);
  }
  const att = rec.lastAttestation;
  const checks = att?.checks;
  if (att && Array.isArray(checks)) {
    const key = checksKey(checks);
    const had = key === undefined ? undefined : sharedChecks.get(key);
    if (had) {
      att.checks = had;
      return rec;
    }
    for (const c of checks) {
      if (typeof c.name === 'string') c.name = intern(c.name);
      if (typeof c.detail === 'string') c.detail = intern(c.detail);
    }
    if (key !== undefined && sharedChecks.size < SHARED_CHECKS_MAX) {
      for (const c of checks) Object.freeze(c);
      sharedChecks.set(key, Object.freeze(checks) as AttestationCheck[]);
    }
  }
  return rec;
}

/**
 * The AttemptSet children's names of the old form (`<set>--<16 hex>`) the instance has records
 * under, read from the records folder's file names: the loader keeps those names
 * (spec/loader.ts LoadOptions.keptNames). Empty when there is no such folder.
 */
export function keptChildNames(stateDir: string, instance: string): Set<string> {
  const dir = path.join(path.resolve(stateDir), instance, 'attempts');
  // A large folder unchanged since its records' index was made: the names kept with it (index-file.ts).
  const namesFile = namesFileOf(path.join(path.resolve(stateDir), instance, 'attempts.index.json'));
  const stamp = folderStamp(dir);
  const known = stamp && readLegacyNames(namesFile, stamp);
  if (known) return new Set(known);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return new Set();
  }
  const out = new Set<string>();
  for (const n of names) {
    if (!n.endsWith('.json')) continue;
    const name = n.slice(0, -'.json'.length);
    if (LEGACY_CHILD_NAME.test(name)) out.add(name);
  }
  return out;
}

export class StatusStore {
  private cache: Map<string, AttemptStatus> | undefined;
  private readonly damagedNow = new Map<string, DamagedRecord>();
  private folderDamage: DamagedFolder | undefined;
  private readonly warned = new Set<string>();
  private recovering: Promise<void> | undefined;
  private loading: Promise<Map<string, AttemptStatus>> | undefined;
  /** The container ids the records name, kept as they are written (container-index.ts). */
  private readonly containers = new ContainerIndex();
  readonly dir: string;
  /** The images the instance's AttemptSets are pinned to (status/pins.ts), beside the records. */
  readonly pins: ImagePins;
  /** The spec each attempt's current run was made from (status/run-specs.ts), for `plan`'s diff. */
  readonly runSpecs: RunSpecs;
  /** Where damaged records are kept. */
  readonly damagedDir: string;
  /** The records of a large folder in one file, a cache of them (index-file.ts). */
  readonly indexFile: string;

  private readonly stateDir: string;

  constructor(
    stateDir: string,
    readonly instance: string,
    private readonly opts: StoreOptions = {},
  ) {
    this.stateDir = path.resolve(stateDir);
    this.dir = path.join(path.resolve(stateDir), instance, 'attempts');
    this.pins = new ImagePins(stateDir, instance);
    this.runSpecs = new RunSpecs(stateDir, instance);
    this.damagedDir = path.join(path.resolve(stateDir), instance, 'damaged');
    this.indexFile = path.join(path.resolve(stateDir), instance, 'attempts.index.json');
  }

  private file(name: string): string {
    return joinName(this.dir, `${name}.json`);
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** One record file: the record, what is wrong with it, or undefined when it is gone. */
  private readOne(name: string): Read {
    const file = this.file(name);
    let value: unknown;
    try {
      value = readJsonFileSync<unknown>(file);
    } catch (err) {
      if (err instanceof CorruptJsonError) return { problem: `not valid JSON (${err.detail})` };
      return { problem: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
    }
    if (value === undefined) return undefined;
    // a newer record stops the command (NewerRecordError) before its shape is judged: never taken for damage
    refuseNewer(value, file);
    const problem = recordProblem(value, name, this.instance);
    if (problem) return { problem };
    // an older record upgraded
    const rec = upgradeRecord(value as AttemptStatus & Record<string, unknown>, file);
    return { rec: this.opts.compact ? shareStrings(rec) : rec };
  }

  async loadAll(): Promise<Map<string, AttemptStatus>> {
    if (this.cache) return this.cache;
    // One read of the folder at a time: a caller while one is under way (a pass beside recover()) shares it.
    const p = (this.loading ??= this.readAll());
    try {
      return await p;
    } finally {
      if (this.loading === p) this.loading = undefined;
    }
  }

  private async readAll(): Promise<Map<string, AttemptStatus>> {
    // A large folder unchanged since its index was made: the index (index-file.ts).
    const stamp = folderStamp(this.dir);
    const indexed = stamp && readIndex(this.indexFile, stamp);
    if (indexed) return this.fromEntries(indexed);
    const startedAt = Date.now();
    const map = new Map<string, AttemptStatus>();
    let entries: string[] = [];
    try {
      entries = readdirSync(this.dir);
      // Damage set aside stays known to this store; a folder that is fine again (mended by hand) clears the rest.
      if (this.folderDamage && !this.folderDamage.keptAt) this.folderDamage = undefined;
    } catch (err) {
      if (!isCode(err, 'ENOENT', 'ENOTDIR', 'ELOOP')) throw err;
      this.noteFolderDamaged(err);
    }
    const names = entries
      .filter((e) => e.endsWith('.json') && !e.startsWith('.'))
      .map((e) => e.slice(0, -5))
      .sort();
    // Synchronous reads in chunks: a thousand records ~20 ms, against ~70-100 ms for promise-based reads.
    const reads = await mapChunked(names, 100, (n) => this.readOne(n));
    // Those already set aside stay known until their attempt's record is written again.
    for (const [n, d] of this.damagedNow) if (!d.keptAt) this.damagedNow.delete(n);
    reads.forEach((r, i) => {
      const name = names[i] as string;
      if (!r) return;
      if ('rec' in r) map.set(name, r.rec);
      else this.noteDamaged({ name, file: this.file(name), problem: r.problem });
    });
    this.cache = map;
    // The folder was still since well before this read, and throughout it: keep an index of it.
    const changedMs = stamp ? Number((BigInt(stamp.mtimeNs) > BigInt(stamp.ctimeNs) ? BigInt(stamp.mtimeNs) : BigInt(stamp.ctimeNs)) / 1_000_000n) : Infinity;
    const keepIndex = this.opts.keepIndex ?? !this.opts.compact;
    if (keepIndex && stamp && names.length >= (this.opts.indexMin ?? INDEX_MIN_RECORDS) && changedMs < startedAt - (this.opts.racyMs ?? RACY_MS)) {
      if (sameStamp(stamp, folderStamp(this.dir))) {
        const list: IndexEntry[] = [];
        reads.forEach((r, i) => {
          if (r) list.push('rec' in r ? [names[i] as string, r.rec] : [names[i] as string, null, r.problem]);
        });
        writeIndex(this.indexFile, stamp, list);
        writeLegacyNames(
          namesFileOf(this.indexFile),
          stamp,
          names.filter((n) => LEGACY_CHILD_NAME.test(n)),
        );
      }
    }
    return map;
  }

  /** The records and damaged ones an index holds, as a read of the folder would have found them. */
  private fromEntries(entries: IndexEntry[]): Map<string, AttemptStatus> {
    const map = new Map<string, AttemptStatus>();
    if (this.folderDamage && !this.folderDamage.keptAt) this.folderDamage = undefined;
    for (const [n, d] of this.damagedNow) if (!d.keptAt) this.damagedNow.delete(n);
    for (const e of entries) {
      if (e[1]) map.set(e[0], this.opts.compact ? shareStrings(e[1]) : e[1]);
      else this.noteDamaged({ name: e[0], file: this.file(e[0]), problem: e[2] });
    }
    this.cache = map;
    return map;
  }

  /** The records folder could not be listed: what is wrong with it, or with the folders above it (thrown). */
  private noteFolderDamaged(err: unknown): void {
    checkStateFolder(this.stateDir, this.instance);
    const problem = folderProblem(this.dir);
    if (!problem) {
      if (isCode(err, 'ENOENT')) return; // no records yet
      throw err;
    }
    if (this.folderDamage?.problem === problem && !this.folderDamage.keptAt) return;
    const code = (err as NodeJS.ErrnoException).code;
    this.folderDamage = { file: this.dir, problem, ...(code ? { code } : {}) };
    this.opts.warn?.(
      `${this.dir}: the status records folder is damaged (${problem}); every attempt is read as if it had no record. ` +
        `\`berth reconcile --once\` (or a running controller) sets it aside and rebuilds the records from the engine`,
    );
  }

  /** The records folder's damage found by the last load (and kept known once set aside). */
  damagedFolder(): DamagedFolder | undefined {
    return this.folderDamage;
  }

  /**
   * Why attempt `name` has no record to read: its record is damaged, or the whole records folder
   * is (then every attempt's record counts as damaged: it cannot be read).
   */
  damagedRecordOf(name: string): DamagedRecord | undefined {
    const own = this.damagedNow.get(name);
    if (own || !this.folderDamage) return own;
    const f = this.folderDamage;
    return { name, file: f.file, problem: `the status records folder is ${f.problem}`, ...(f.keptAt ? { keptAt: f.keptAt } : {}) };
  }

  private noteDamaged(d: DamagedRecord): void {
    this.damagedNow.set(d.name, d);
    const key = `${d.file}\0${d.problem}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.opts.warn?.(
      `${d.file}: damaged status record (${d.problem}); attempt ${d.name} is read as if it had no record, and reconcile rebuilds it from the engine`,
    );
  }

  /** The damaged records of the last load (and those set aside since, until their attempt's record is written again). */
  damaged(): ReadonlyMap<string, DamagedRecord> {
    return this.damagedNow;
  }

  /** Forget the in-memory copy so the next read comes from disk (another process may have written). */
  invalidate(): void {
    this.cache = undefined;
    this.loading = undefined;
  }

  /** The records by the container id they name (ownership.ts recordIndex reads it as recordedContainers does), kept between calls. */
  async byContainer(): Promise<ReadonlyMap<string, AttemptStatus>> {
    return this.containers.over(await this.loadAll());
  }

  async get(name: string): Promise<AttemptStatus | undefined> {
    return (await this.loadAll()).get(name);
  }

  /**
   * A writer's start-up: removes the temp files of interrupted writes and sets the damaged
   * records aside. Runs once per store, before its first write; a command that holds the
   * instance's lock may call it earlier. Never throws for one file: a file it cannot move is
   * reported and left (read as missing all the same).
   */
  recover(): Promise<void> {
    this.recovering ??= this.doRecover().catch((err: unknown) => {
      this.recovering = undefined; // tried again by the next write
      throw err;
    });
    return this.recovering;
  }

  private async doRecover(): Promise<void> {
    for (const dir of [this.dir, this.runSpecs.dir]) {
      await removeStaleTemps(dir, DEFAULTS.staleTempMs, this.now()).catch((err: unknown) => {
        this.opts.warn?.(`${dir}: could not remove temp files of interrupted writes (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      });
    }
    await this.loadAll();
    if (this.folderDamage && !this.folderDamage.keptAt && folderProblem(this.dir)) await this.setFolderAside(this.folderDamage);
    for (const d of [...this.damagedNow.values()]) {
      // Read again: set aside only what is still damaged now.
      const again = this.readOne(d.name);
      if (!again || 'rec' in again) {
        this.damagedNow.delete(d.name);
        continue;
      }
      try {
        d.keptAt = await this.setAside(d.name);
        this.opts.warn?.(`${d.file}: damaged status record (${d.problem}) set aside as ${d.keptAt}`);
      } catch (err) {
        this.opts.warn?.(
          `${d.file}: damaged status record (${d.problem}) could not be set aside (${(err as NodeJS.ErrnoException).code ?? String(err)}); it will be replaced`,
        );
      }
    }
  }

  private async setAside(name: string): Promise<string> {
    return setAside(this.file(name), this.damagedDir, this.now());
  }

  /** Moves the damaged records folder aside (a failure is thrown: no record can be written until it goes). */
  private async setFolderAside(d: DamagedFolder): Promise<void> {
    try {
      d.keptAt = await setAside(this.dir, this.damagedDir, this.now());
    } catch (err) {
      throw new Error(
        `${this.dir}: the status records folder is damaged (${d.problem}) and could not be set aside (${(err as NodeJS.ErrnoException).code ?? String(err)}); move it out of the way`,
        { cause: err },
      );
    }
    this.opts.warn?.(`${this.dir}: the damaged status records folder (${d.problem}) was set aside as ${d.keptAt}; the records are rebuilt from the engine`);
  }

  /**
   * The records folder, made when missing. One that became damaged while this store ran (a
   * writer's own records in memory, a file on disk in its place) is set aside, and the records
   * this store holds are written again into a new one.
   */
  private async ensureDir(map: Map<string, AttemptStatus>, except: string): Promise<void> {
    try {
      await fs.mkdir(this.dir, { recursive: true });
      return;
    } catch (err) {
      if (!isCode(err, 'EEXIST', 'ENOTDIR', 'ENOENT')) throw err;
      checkStateFolder(this.stateDir, this.instance);
      const problem = folderProblem(this.dir);
      if (!problem) throw err;
      this.folderDamage = { file: this.dir, problem };
      await this.setFolderAside(this.folderDamage);
    }
    await fs.mkdir(this.dir, { recursive: true });
    for (const rec of map.values()) if (rec.name !== except) await writeFileAtomic(this.file(rec.name), JSON.stringify(rec, null, 2) + '\n');
  }

  async put(rec: AttemptStatus): Promise<void> {
    await this.recover();
    const map = await this.loadAll();
    const d = this.damagedNow.get(rec.name);
    const rebuilt =
      d && !map.has(rec.name)
        ? {
            warnings: [
              ...(rec.warnings ?? []),
              `${new Date(this.now()).toISOString()}: status record rebuilt from the engine: the earlier one was damaged (${d.problem})${d.keptAt ? ` and is kept at ${d.keptAt}` : ''}`,
            ],
          }
        : {};
    const { schemaVersion: _v, ...fields } = rec;
    const next = { schemaVersion: SCHEMA_VERSIONS.statusRecord, ...fields, ...rebuilt, updatedAt: new Date(this.now()).toISOString() };
    await this.ensureDir(map, rec.name);
    await writeFileAtomic(this.file(rec.name), JSON.stringify(next, null, 2) + '\n');
    this.containers.wrote(map, map.get(rec.name), next);
    map.set(rec.name, next);
    this.damagedNow.delete(rec.name);
  }

  async remove(name: string): Promise<void> {
    await this.recover();
    const map = await this.loadAll();
    await fs.rm(this.file(name), { force: true });
    await this.runSpecs.remove(name);
    this.containers.wrote(map, map.get(name), undefined);
    map.delete(name);
    this.damagedNow.delete(name);
  }
}
