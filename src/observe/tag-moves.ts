/**
 * Tags that moved under a set's pinned image: the set's children are made from the id pinned when
 * its first child was created (status/pins.ts); a reference that names another id now (or none)
 * is reported (`summary`, `describe`), never followed. Pure.
 */
import { pinsHold, type PinKey, type SetPins, type TagMove } from '../status/pins';
import { isImageId, resolveImage, type ImageIndex } from './images';

export type { TagMove } from '../status/pins';

/** The moved tags of `sets` (each with its pin key: a pin made under another is not in force), by set, then reference. */
export function tagMoves(pins: ReadonlyMap<string, SetPins>, sets: Iterable<{ name: string } & PinKey>, index: ImageIndex): TagMove[] {
  const out: TagMove[] = [];
  for (const s of sets) {
    const p = pins.get(s.name);
    if (!pinsHold(p, s)) continue;
    for (const ref of Object.keys(p.images).sort()) {
      const pin = p.images[ref];
      if (!pin || isImageId(ref)) continue;
      const now = resolveImage(index, ref)?.id ?? null;
      if (now !== pin.id) out.push({ set: s.name, ref, pinned: pin.id, now });
    }
  }
  return out.sort((a, b) => (a.set < b.set ? -1 : a.set > b.set ? 1 : a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
}

/** One line for a person: the tag, the pinned id the set runs, what the tag names now. */
export function tagMoveText(m: TagMove): string {
  return `image ${m.ref} moved: set ${m.set} runs the pinned ${m.pinned}; the tag now names ${m.now ?? 'no image on the engine'} (not followed until the set's template changes where its children's spec hash reads it)`;
}
