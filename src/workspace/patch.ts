/**
 * changes.patch: the text changes of regular files as a git-style unified diff that `git apply`
 * and `patch -p1` take against a clean copy of the fixture (hunks by jsdiff). Binary changes, and
 * changes whose old or new side cannot be diffed as text (larger than
 * DEFAULTS.workspaceTextDiffBytes, or the fixture file changed on the host since it was copied
 * in), are named at the top of the patch (`Binary files a/p and b/p differ`, lines both tools
 * skip); their bytes are in files/. A mode change of such a file still gets its own
 * `old mode`/`new mode` section. Links and folders are in changes.json only.
 * A few file pairs are held in memory (the one diffed and those read ahead), each side at most
 * the text-diff cap.
 */
import { isUtf8 } from 'node:buffer';
import { promises as fsp } from 'node:fs';
import { formatPatch, structuredPatch, type StructuredPatch } from 'diff';

export interface PatchFile {
  path: string;
  /** The fixture's side: its permission bits, or absent (added). */
  oldMode?: number;
  /** The workspace's side: its permission bits, or absent (deleted). */
  newMode?: number;
  /** Content changed (else only the mode). */
  content: boolean;
}

export interface PatchSources {
  /** The fixture's bytes of `path` as copied in; undefined when they cannot be had (changed on the host since, or too large). */
  before(path: string): Promise<Buffer | undefined>;
  /** The workspace's bytes of `path` (from files/); undefined when too large. */
  after(path: string): Promise<Buffer | undefined>;
}

/** A buffer that is text: valid UTF-8 without NUL. */
export function isText(b: Buffer): boolean {
  return !b.includes(0) && isUtf8(b);
}

/** git's two file modes: executable or not. */
const gitMode = (m: number): string => ((m & 0o100) !== 0 ? '100755' : '100644');

/** How long jsdiff may take on one file before it is named like a binary one. */
const DIFF_TIMEOUT_MS = 5_000;

/**
 * Writes the patch of `changes` to `out`: the named (binary) changes first, then one section per
 * file, deletions first (so a folder that became a file, or the reverse, applies). Returns the
 * paths whose content was named rather than diffed because it is not text.
 */
export async function writePatch(
  out: fsp.FileHandle,
  bodyFile: string,
  changes: readonly PatchFile[],
  src: PatchSources,
  prepared?: ReadonlyMap<string, PreparedSection>,
): Promise<Set<string>> {
  const binary = new Set<string>();
  // a section made ahead for this very change (prepareSection) is used as it is: its sides are not read again
  const ready = (c: PatchFile): PreparedSection | undefined => {
    const p = prepared?.get(c.path);
    return p && p.file.oldMode === c.oldMode && p.file.newMode === c.newMode && p.file.content === c.content ? p : undefined;
  };
  const named: string[] = [];
  const body = await fsp.open(bodyFile, 'wx', 0o600);
  try {
    const order = [...changes].sort((a, b) => rank(a) - rank(b) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    // the next READ_AHEAD files' two sides are read while this one is diffed (reads wait on the disk, diffs on the CPU)
    const reads: (Promise<Sides> | undefined)[] = [];
    const read = (i: number): Promise<Sides> => {
      let r = reads[i];
      if (!r) {
        const c = order[i] as PatchFile;
        r = ready(c) ? Promise.resolve(NO_SIDES) : sidesOf(c, src);
        r.catch(() => undefined); // awaited in its turn; one that fails before then is not unhandled
        reads[i] = r;
      }
      return r;
    };
    // sections are written in batches (one write per file would be a thread-pool round trip each)
    let held: string[] = [];
    let heldBytes = 0;
    const flush = async (): Promise<void> => {
      if (!held.length) return;
      const text = held.join('');
      held = [];
      heldBytes = 0;
      await body.write(text);
    };
    for (let i = 0; i < order.length; i++) {
      for (let j = i + 1; j < Math.min(order.length, i + 1 + READ_AHEAD); j++) void read(j);
      const sides = await read(i);
      reads[i] = undefined;
      const c = order[i] as PatchFile;
      const p = ready(c);
      if (p?.binary) binary.add(c.path);
      if (p?.named !== undefined) named.push(p.named);
      const section = p ? p.section : sectionOf(c, sides, binary, named);
      if (section) {
        held.push(section);
        heldBytes += section.length;
      }
      if (heldBytes >= BODY_WRITE_CHARS) await flush();
    }
    await flush();
  } finally {
    await body.close();
  }
  if (named.length) await out.write(named.join(''));
  const again = await fsp.open(bodyFile, 'r');
  try {
    for await (const chunk of again.createReadStream({ autoClose: false })) await out.write(chunk as Buffer);
  } finally {
    await again.close();
    await fsp.rm(bodyFile, { force: true });
  }
  return binary;
}

const rank = (c: PatchFile): number => (c.newMode === undefined ? 0 : 1);

/** Characters of sections held before they are written to the body file. */
const BODY_WRITE_CHARS = 256 * 1024;

/** Files whose two sides are read ahead of the one diffed (each side at most the text-diff cap in memory). */
const READ_AHEAD = 8;

/** A change's two sides: absent when not needed (mode only) or not to be had. */
export interface PatchSides {
  oldText: Buffer | undefined;
  newText: Buffer | undefined;
}
type Sides = PatchSides;
const NO_SIDES: Sides = { oldText: undefined, newText: undefined };

/** A file's section made ahead of writePatch (the export makes it while the archive is still read, the file's bytes in hand). */
export interface PreparedSection {
  /** The change it was made for: writePatch uses it for an equal change only. */
  file: PatchFile;
  section: string | undefined;
  /** Its `Binary files ... differ` line, when it is named rather than diffed. */
  named: string | undefined;
  /** Named because its content is not text. */
  binary: boolean;
}

/** The section of `c` from its two sides, as writePatch would make it from the same sides (PatchSources' `before` and `after`). */
export function prepareSection(c: PatchFile, sides: PatchSides): PreparedSection {
  const binary = new Set<string>();
  const named: string[] = [];
  const section = sectionOf(c, sides, binary, named);
  return { file: { ...c }, section, named: named[0], binary: binary.has(c.path) };
}

async function sidesOf(c: PatchFile, src: PatchSources): Promise<Sides> {
  if (!c.content) return { oldText: undefined, newText: undefined };
  const [oldText, newText] = await Promise.all([
    c.oldMode === undefined ? Buffer.alloc(0) : src.before(c.path),
    c.newMode === undefined ? Buffer.alloc(0) : src.after(c.path),
  ]);
  return { oldText, newText };
}

function sectionOf(c: PatchFile, { oldText, newText }: Sides, binary: Set<string>, named: string[]): string | undefined {
  const a = `a/${c.path}`;
  const b = `b/${c.path}`;
  const isCreate = c.oldMode === undefined;
  const isDelete = c.newMode === undefined;
  const oldMode = c.oldMode === undefined ? undefined : gitMode(c.oldMode);
  const newMode = c.newMode === undefined ? undefined : gitMode(c.newMode);
  const modeOnly = (): string | undefined =>
    !isCreate && !isDelete && oldMode !== newMode ? formatPatch({ ...base(a, b), isGit: true, oldMode, newMode, hunks: [] }) : undefined;
  if (!c.content) return modeOnly();
  const name = () => named.push(`Binary files ${isCreate ? '/dev/null' : a} and ${isDelete ? '/dev/null' : b} differ\n`);
  if (!oldText || !newText) {
    name();
    return modeOnly();
  }
  if (!isText(oldText) || !isText(newText)) {
    binary.add(c.path);
    name();
    return modeOnly();
  }
  const p = trimmedPatch(isCreate ? '/dev/null' : a, isDelete ? '/dev/null' : b, oldText.toString('utf8'), newText.toString('utf8'));
  if (!p) {
    name();
    return modeOnly();
  }
  if (!isCreate && !isDelete && p.hunks.length === 0) return modeOnly();
  return formatPatch({
    ...p,
    isGit: true,
    ...(isCreate ? { isCreate: true, newMode } : {}),
    ...(isDelete ? { isDelete: true, oldMode } : {}),
    ...(!isCreate && !isDelete && oldMode !== newMode ? { oldMode, newMode } : {}),
  });
}

/** Lines of context around a change. */
const CONTEXT = 3;

/** `s` as lines, each with its `\n` (the last without one when `s` does not end with it). */
function linesOf(s: string): string[] {
  const parts = s.split('\n');
  const last = parts.pop() as string;
  const out = parts.map((l) => l + '\n');
  if (last !== '') out.push(last);
  return out;
}

/**
 * jsdiff's structured patch of the two texts, the lines they share at both ends (all but the
 * context kept) left out of the diff and the hunks' line numbers moved back: an edit in a long
 * file costs the lines around it, not the file (as git's diff trims). The hunks are those of the
 * middle, a valid diff of the whole; where the shared ends are kept whole (a change near an end),
 * the file's last line and its missing newline are jsdiff's to mark as before.
 */
function trimmedPatch(a: string, b: string, oldStr: string, newStr: string): StructuredPatch | undefined {
  const o = linesOf(oldStr);
  const n = linesOf(newStr);
  const most = Math.min(o.length, n.length);
  let pre = 0;
  while (pre < most && o[pre] === n[pre]) pre++;
  let post = 0;
  while (post < most - pre && o[o.length - 1 - post] === n[n.length - 1 - post]) post++;
  const cutStart = Math.max(0, pre - CONTEXT);
  const cutEnd = Math.max(0, post - CONTEXT);
  const p = structuredPatch(a, b, o.slice(cutStart, o.length - cutEnd).join(''), n.slice(cutStart, n.length - cutEnd).join(''), undefined, undefined, {
    context: CONTEXT,
    timeout: DIFF_TIMEOUT_MS,
  });
  if (!p || cutStart === 0) return p;
  return { ...p, hunks: p.hunks.map((h) => ({ ...h, oldStart: h.oldStart + cutStart, newStart: h.newStart + cutStart })) };
}

function base(a: string, b: string): Omit<StructuredPatch, 'hunks'> {
  return { oldFileName: a, newFileName: b, oldHeader: undefined, newHeader: undefined };
}
