/**
 * Fixture layers, pure: what a working dir holds after the layers are copied in, in order, each
 * over the ones before (as `docker cp` of each in turn would leave it). Per path, the later layer
 * wins: a file or link puts away whatever was there (a folder with everything below it); a folder
 * over a folder merges the two (the later one's mode); a folder over a file or link replaces it.
 */

/** Anything with a type; 'dir' is a folder. */
export interface Typed {
  type: string;
}

const byPath = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Puts `layer` (path → entry, relative to the working dir) over `into`, in place. */
export function overlay<T extends Typed>(into: Map<string, T>, layer: Iterable<readonly [string, T]>): void {
  // a folder before what is below it, whatever order the layer lists them in
  const items = [...layer].sort((a, b) => byPath(a[0], b[0]));
  for (const [p, e] of items) {
    const was = into.get(p);
    if (e.type !== 'dir' && was?.type === 'dir') {
      const below = p === '.' ? '' : `${p}/`;
      for (const k of [...into.keys()]) if (k !== p && k.startsWith(below)) into.delete(k);
    }
    into.set(p, e);
  }
}

/** One entry of a layer: its path relative to the working dir and its type. */
export interface LayerPath {
  path: string;
  type: string;
}

/**
 * Which entries of each layer a stacked archive carries (the same length as `layers`, one flag per
 * entry): the entries the merged working dir holds from that layer, and every folder that is a
 * folder in the end too (a second folder entry only sets the mode again, and keeps the later
 * layer's). Everything else was put away by a later layer: leaving it out means no entry of the
 * archive ever replaces a folder with a file or the reverse (the engine refuses that), and no
 * bytes are copied in only to be replaced.
 */
export function keptEntries(layers: readonly (readonly LayerPath[])[]): boolean[][] {
  if (layers.length === 1) return [(layers[0] as readonly LayerPath[]).map(() => true)];
  const merged = new Map<string, { type: string; layer: number }>();
  layers.forEach((entries, i) =>
    overlay(
      merged,
      entries.map((e) => [e.path, { type: e.type, layer: i }] as const),
    ),
  );
  return layers.map((entries, i) =>
    entries.map((e) => {
      const m = merged.get(e.path);
      return m !== undefined && (m.layer === i || (e.type === 'dir' && m.type === 'dir'));
    }),
  );
}

/** The merged index of the layers (each entry marked with the layer it comes from), sorted by path. */
export function mergedIndex<T extends { path: string; type: string }>(layers: readonly (readonly T[])[]): (T & { layer: number })[] {
  const merged = new Map<string, T & { layer: number }>();
  layers.forEach((entries, i) =>
    overlay(
      merged,
      entries.map((e) => [e.path, { ...e, layer: i }] as const),
    ),
  );
  return [...merged.values()].sort((a, b) => byPath(a.path, b.path));
}
