/**
 * The last good expansion of each AttemptSet, so that a slip in a set's file never rewrites its
 * results (docs/CONTRACT.md, berth's section, "A spec broken while the controller runs"). A
 * writer (`reconcile`, the controller) keeps, for every set that loads whole (valid, every child
 * loaded), its expansion in `<state>/<instance>/last-good/<set>.json`: the set's settings, its
 * children's specs (a set made from its shape kept as the shape, as the spec cache on disk keeps
 * it: disk-cache.ts), written only when it changed. While the set's file is broken (it does not
 * parse, the set is invalid, its `fromDir` is missing) or some of its children are (a fixture
 * missing), every reader of the specs (`get`, `summary`, `wait`, the report, the planner) sees
 * the set and those children as under their last good spec, each with the errors that hold it
 * (`held`): their labels, their set's score and grading, their place in the set. The planner
 * lets what runs under it go on (a run ends, is harvested and graded as it would have been) and
 * starts no new run for them; a child that never ran is Invalid as before.
 *
 * The file: one header line (`schemaVersion`, the set, its file, a fingerprint of the expansion),
 * then the outcome. A file of another schema version or one that cannot be read is ignored (the
 * set then has no last good expansion, as before berth kept one); it is replaced at the next
 * write. It holds what the spec file says (as the spec cache does), never a secret's value.
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, promises as fsp, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../status/atomic-file';
import type { DocOutcome } from './check-document';
import { pack, unpack } from './disk-cache';
import type { FileOutcome } from './load-file';
import type { LoadReport } from './loader';
import type { LoadedSet, LoadedSpec, SpecError } from './types';

/** The format of a kept expansion; another one is ignored (and replaced by the next write). */
export const LAST_GOOD_SCHEMA_VERSION = 1;
/** Below `<state>/<instance>/`. */
export const LAST_GOOD_DIR = 'last-good';

const SET_FILE = /^([a-z0-9][a-z0-9-]*)\.json$/;

interface Header {
  schemaVersion: number;
  set: string;
  /** The set's spec file, relative to the specs folder. */
  file: string;
  fingerprint: string;
}

/** A kept expansion as read back. */
export interface KeptSet {
  set: string;
  file: string;
  loaded: LoadedSet;
  children: Map<string, LoadedSpec>;
}

/** What decides a set's expansion: its file, settings, children, their coordinates and hashes. */
function fingerprintOf(rel: string, doc: DocOutcome): string {
  const s = doc.set as NonNullable<DocOutcome['set']>;
  const h = createHash('sha256');
  h.update(`${rel}\0${JSON.stringify(s.loaded.policy)}\0${JSON.stringify(s.loaded.coords)}\0`);
  for (const c of s.children) h.update(`${c.name}:${c.loaded?.hash ?? ''}\n`);
  return h.digest('hex');
}

/** A set that loaded whole: valid, with children, each loaded. */
function whole(doc: DocOutcome): boolean {
  const s = doc.set;
  return !!s && s.loaded.valid && doc.errors.length === 0 && s.children.length > 0 && s.children.every((c) => c.loaded !== undefined && c.errors.length === 0);
}

function readHeader(file: string): Header | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString('utf8');
    const nl = text.indexOf('\n');
    if (nl < 0) return undefined;
    const h = JSON.parse(text.slice(0, nl)) as Partial<Header>;
    if (h.schemaVersion !== LAST_GOOD_SCHEMA_VERSION || typeof h.set !== 'string' || typeof h.file !== 'string' || typeof h.fingerprint !== 'string')
      return undefined;
    return h as Header;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A kept expansion, or undefined when it cannot be used (another version, damaged, a shape that no longer makes its children). */
function readKept(file: string, set: string): KeptSet | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    const nl = text.indexOf('\n');
    const header = JSON.parse(text.slice(0, nl)) as Partial<Header>;
    if (header.schemaVersion !== LAST_GOOD_SCHEMA_VERSION || header.set !== set || typeof header.file !== 'string') return undefined;
    const outcome = unpack(JSON.parse(text.slice(nl + 1)) as FileOutcome);
    const doc = outcome?.docs[0];
    if (!doc?.set || !whole(doc)) return undefined;
    const children = new Map<string, LoadedSpec>();
    for (const c of doc.set.children) children.set(c.name, c.loaded as LoadedSpec);
    return { set, file: header.file, loaded: doc.set.loaded, children };
  } catch {
    return undefined;
  }
}

export class LastGoodSets {
  readonly dir: string;
  /** Set → the fingerprint on disk, as this process wrote or read it. */
  private readonly onDisk = new Map<string, string>();
  /** Loads already kept (a controller's batches share one load). */
  private readonly kept = new WeakSet<object>();
  /** Kept expansions read, by set, with the file's size and mtime they were read at. */
  private readonly read = new Map<string, { sig: string; kept: KeptSet | undefined }>();

  constructor(stateDir: string, instance: string) {
    this.dir = path.join(path.resolve(stateDir), instance, LAST_GOOD_DIR);
  }

  /**
   * A writer: keeps the expansion of every set of `load` that loaded whole, when it differs from
   * the one kept. Never throws (a write that fails leaves the one before in force).
   */
  async keep(load: LoadReport): Promise<void> {
    if (this.kept.has(load) || !load.setDocs || load.rootError) return;
    this.kept.add(load);
    for (const [set, { rel, doc }] of load.setDocs) {
      if (!whole(doc) || !SET_FILE.test(`${set}.json`)) continue;
      const fingerprint = fingerprintOf(rel, doc);
      const file = path.join(this.dir, `${set}.json`);
      if (!this.onDisk.has(set)) {
        const h = readHeader(file);
        if (h) this.onDisk.set(set, h.fingerprint);
      }
      if (this.onDisk.get(set) === fingerprint) continue;
      const header: Header = { schemaVersion: LAST_GOOD_SCHEMA_VERSION, set, file: rel, fingerprint };
      const outcome: FileOutcome = { docs: [doc], errors: [], unreadable: false };
      try {
        await fsp.mkdir(this.dir, { recursive: true });
        await writeFileAtomic(file, `${JSON.stringify(header)}\n${JSON.stringify(pack(outcome))}\n`);
        this.onDisk.set(set, fingerprint);
      } catch {
        /* best effort: the expansion kept before stays in force */
      }
    }
  }

  /** Every kept expansion (read again only when its file changed). */
  private all(): KeptSet[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const out: KeptSet[] = [];
    for (const n of names.sort()) {
      const set = SET_FILE.exec(n)?.[1];
      if (!set) continue;
      const file = path.join(this.dir, n);
      let sig: string;
      try {
        const st = statSync(file);
        sig = `${st.size}:${st.mtimeMs}:${st.ino}`;
      } catch {
        continue;
      }
      let had = this.read.get(set);
      if (had?.sig !== sig) this.read.set(set, (had = { sig, kept: readKept(file, set) }));
      if (had.kept) out.push(had.kept);
    }
    return out;
  }

  /**
   * `load` as its readers see it: each set whose file is broken (or whose `fromDir` is missing)
   * as its last good expansion, and each child of a set that does not load now (its set broken,
   * its fixture missing) as its last good spec, each with the errors that hold it (`held`); those
   * children are no longer protected names (the planner plans them under their last good spec).
   * `root`: the specs folder `load` read. Reads the kept expansions only when something is broken.
   */
  apply(load: LoadReport, root: string): LoadReport {
    if (load.rootError) return load;
    const sets = load.sets ?? new Map<string, LoadedSet>();
    const broken = load.unreadableFiles.size > 0 || load.unreadableFolders.size > 0 || load.protectedNames.size > 0 || [...sets.values()].some((s) => !s.valid);
    if (!broken) return load;
    const kept = this.all();
    if (kept.length === 0) return load;
    const specs = [...load.specs];
    const names = new Set(specs.map((s) => s.spec.name));
    const protectedNames = new Set(load.protectedNames);
    const heldSets = new Map(sets);
    let changed = false;
    for (const k of kept) {
      const cur = sets.get(k.set);
      const inFolder = [...load.unreadableFolders].some((d) => k.file.startsWith(`${d}/`));
      const fileBroken = load.unreadableFiles.has(k.file) || inFolder;
      const abs = path.resolve(root, k.file);
      const setErrors = load.errors.filter(
        (e) =>
          e.set === k.set ||
          (e.set === undefined && e.attempt === undefined && (path.resolve(e.file) === abs || (inFolder && abs.startsWith(path.resolve(e.file) + path.sep)))),
      );
      const hold = (name: string, l: LoadedSpec, errors: SpecError[]) => {
        specs.push({ ...l, held: errors });
        names.add(name);
        protectedNames.delete(name);
        changed = true;
      };
      if (cur ? !cur.valid || cur.children.length === 0 : fileBroken) {
        // The set as a whole: its last good expansion, every child that does not load now.
        heldSets.set(k.set, { ...k.loaded, held: setErrors });
        changed = true;
        for (const [name, l] of k.children) if (!names.has(name)) hold(name, l, setErrors);
        // A name read from its broken file that is the set's own (the file could not say it was a set): no attempt.
        if (fileBroken && !k.children.has(k.set) && !names.has(k.set)) protectedNames.delete(k.set);
      } else if (cur) {
        // The set loads: its children that do not (a fixture missing) keep their last good spec.
        for (const name of cur.children) {
          const l = k.children.get(name);
          if (!l || names.has(name) || !protectedNames.has(name)) continue;
          hold(name, l, [...setErrors, ...load.errors.filter((e) => e.attempt === name)]);
        }
      }
    }
    if (!changed) return load;
    return { ...load, specs, protectedNames, sets: heldSets };
  }
}
