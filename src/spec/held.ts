/**
 * Which spec errors hold an attempt at its last good spec: a spec that loaded before and is
 * broken now leaves what runs under it exactly as it is (the planner's protected names and
 * unreadable files), and the views say why. The errors of an attempt are its own (its name is
 * declared but did not load), those of an AttemptSet that declares it, or, when its spec file
 * (or a folder above it) cannot be read far enough to name anything, that file's.
 */
import path from 'node:path';
import type { LoadResult, SpecError } from './types';

/**
 * The errors holding `name` (none when its spec loaded, or when no file declares it any more:
 * then it is removed, not held). `source`: the spec file it was last made from, relative to the
 * specs root (its status record's `source`); `root`: the specs folder the load read.
 */
export function heldBy(load: LoadResult, root: string, name: string, source?: string): SpecError[] {
  const loaded = loadedByName(load).get(name);
  // a set's child kept at its last good spec (last-good.ts) says what holds it
  if (loaded) return loaded.held ?? [];
  const own = load.protectedNames.has(name)
    ? load.errors.filter((e) => e.attempt === name || (e.attempt === undefined && e.set !== undefined && !!load.sets?.get(e.set)?.children.includes(name)))
    : [];
  if (own.length) return own;
  if (source === undefined || source === '') return [];
  const file = path.resolve(root, source);
  // a name read from a file the parser gave up on (protected) is held by that file's errors too
  if (load.unreadableFiles.has(source) || load.protectedNames.has(name)) return load.errors.filter((e) => path.resolve(e.file) === file);
  for (const dir of load.unreadableFolders) {
    const folder = path.resolve(root, dir);
    if (source.startsWith(`${dir}/`)) return load.errors.filter((e) => path.resolve(e.file) === folder);
  }
  return [];
}

/** The specs a load loaded by name, once per load: `get` asks for each of 100,000 attempts (issue 55). */
const byName = new WeakMap<LoadResult, Map<string, LoadResult['specs'][number]>>();
function loadedByName(load: LoadResult): Map<string, LoadResult['specs'][number]> {
  let n = byName.get(load);
  if (!n) byName.set(load, (n = new Map(load.specs.map((s) => [s.spec.name, s]))));
  return n;
}

/** The files with errors, each once with its first error (by position), in file order. */
export function brokenFiles(errors: readonly SpecError[]): SpecError[] {
  const first = new Map<string, SpecError>();
  for (const e of errors) {
    const had = first.get(e.file);
    if (!had || e.line < had.line || (e.line === had.line && e.col < had.col)) first.set(e.file, e);
  }
  return [...first.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}
