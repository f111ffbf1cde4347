/**
 * The images an AttemptSet's children are made from, pinned by id: `<state>/<instance>/sets/<set>.json`,
 * written atomically (temp, fsync, rename, fsync dir) as status records are, so a restarted berth
 * keeps them. A set's pin of a reference is made when its first child is created and holds while
 * the set's template is unchanged (`templateHash`, SetPolicy): a changed template starts afresh.
 */
import { readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ImageProvenance } from './types';
import { CorruptJsonError, readJsonFileSync, writeFileAtomic } from './atomic-file';

export interface ImagePin {
  id: string;
  repoDigests: string[];
  /** When the pin was made (berth's clock). */
  at: string;
}

export interface SetPins {
  set: string;
  /** The set's template hash the pins were made under (SetPolicy.templateHash). */
  templateHash: string;
  /** Image reference, as the template names it → the id its children are made from. */
  images: Record<string, ImagePin>;
}

/** A reference that names another id than the one its set pinned (observe/tag-moves.ts finds them). */
export interface TagMove {
  set: string;
  ref: string;
  /** The id the set's children are made from. */
  pinned: string;
  /** The id the reference names on the engine now; null: it names no image there any more. */
  now: string | null;
}

/** The pin of `ref` that holds for a set whose template hashes to `templateHash`, if any. */
export function pinOf(pins: SetPins | undefined, templateHash: string | undefined, ref: string): ImagePin | undefined {
  if (!pins || templateHash === undefined || pins.templateHash !== templateHash) return undefined;
  return Object.hasOwn(pins.images, ref) ? pins.images[ref] : undefined;
}

/** A pin as a status record's provenance names it. */
export function pinnedProvenance(ref: string, pin: ImagePin): ImageProvenance {
  return { ref, id: pin.id, repoDigests: [...pin.repoDigests], pinned: true };
}

const SET_FILE = /^([a-z0-9][a-z0-9-]*)\.json$/;

function valid(v: unknown, set: string): v is SetPins {
  if (typeof v !== 'object' || v === null) return false;
  const p = v as Partial<SetPins>;
  return p.set === set && typeof p.templateHash === 'string' && typeof p.images === 'object' && p.images !== null;
}

export class ImagePins {
  readonly dir: string;
  private cache: Map<string, SetPins> | undefined;
  private chain = new Map<string, Promise<unknown>>();

  constructor(stateDir: string, instance: string) {
    this.dir = path.join(path.resolve(stateDir), instance, 'sets');
  }

  /** Every set's pins, read once (a damaged file counts as none: its set pins afresh); then kept, as this writer changes them. */
  loadAll(): ReadonlyMap<string, SetPins> {
    return (this.cache ??= this.readAll());
  }

  /** Read again from disk (a reader that is not the writer: `summary`, `describe`). */
  reload(): ReadonlyMap<string, SetPins> {
    this.cache = undefined;
    return this.loadAll();
  }

  private readAll(): Map<string, SetPins> {
    const out = new Map<string, SetPins>();
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return out;
    }
    for (const n of names.sort()) {
      const set = SET_FILE.exec(n)?.[1];
      if (!set) continue;
      try {
        const v = readJsonFileSync<unknown>(path.join(this.dir, n));
        if (valid(v, set)) out.set(set, v);
      } catch (err) {
        if (!(err instanceof CorruptJsonError)) throw err;
      }
    }
    return out;
  }

  /**
   * Pins `ref` of `set` to `pin` unless a pin of it under this template holds already (the first
   * one stays: children created at once in one pass pin the same id). Returns the pin in force.
   * Writes to one set's file are serialized.
   */
  async pin(set: string, templateHash: string, ref: string, pin: ImagePin): Promise<ImagePin> {
    const prev = this.chain.get(set) ?? Promise.resolve();
    const next = prev.then(async () => {
      const all = this.loadAll() as Map<string, SetPins>;
      const cur = all.get(set);
      const held = pinOf(cur, templateHash, ref);
      if (held) return held;
      const base = cur && cur.templateHash === templateHash ? cur : { set, templateHash, images: {} };
      const updated: SetPins = { ...base, images: { ...base.images, [ref]: pin } };
      await mkdir(this.dir, { recursive: true });
      await writeFileAtomic(path.join(this.dir, `${set}.json`), `${JSON.stringify(updated, null, 2)}\n`);
      all.set(set, updated);
      return pin;
    });
    this.chain.set(
      set,
      next.catch(() => undefined),
    );
    return next;
  }
}
