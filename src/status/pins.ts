/**
 * The images an AttemptSet's children are made from, pinned by id: `<state>/<instance>/sets/<set>.json`,
 * written atomically (temp, fsync, rename, fsync dir) as status records are, so a restarted berth
 * keeps them. A set's pin of a reference is made when its first child is created and holds while
 * the set's pin key is unchanged (`pinKey`, SetPolicy: its template less what no child's spec hash
 * reads, spec/hash.ts templatePinKey): an edit that re-runs no child keeps it, any other starts
 * afresh. A file made before pins had a key holds while the template is as written then
 * (`templateHash`), and gets the key at the first pass that finds it so (upgrade).
 */
import { promises as fsp, readdirSync } from 'node:fs';
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
  /** The set's template hash when the pins were made (SetPolicy.templateHash): what holds them when there is no `pinKey`. */
  templateHash: string;
  /** The set's pin key the pins hold under (SetPolicy.pinKey); absent in a file made before it. */
  pinKey?: string;
  /** Image reference, as the template names it → the id its children are made from. */
  images: Record<string, ImagePin>;
}

/** What a set's pins are held under (as SetPolicy has them): its pin key, and its template hash for a file made before pin keys. */
export interface PinKey {
  pinKey?: string;
  templateHash?: string;
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

/** A set's key, as its policy has it. */
export function pinKeyOf(p: PinKey): PinKey {
  return { ...(p.pinKey !== undefined ? { pinKey: p.pinKey } : {}), ...(p.templateHash !== undefined ? { templateHash: p.templateHash } : {}) };
}

/** Whether a set's pins hold for the set as it is now (`key`): the same pin key, or (a file made before pin keys) the same template. */
export function pinsHold(pins: SetPins | undefined, key: PinKey): pins is SetPins {
  if (!pins) return false;
  if (pins.pinKey !== undefined) return key.pinKey !== undefined && pins.pinKey === key.pinKey;
  return key.templateHash !== undefined && pins.templateHash === key.templateHash;
}

/** The pin of `ref` that holds for a set whose key is `key`, if any. */
export function pinOf(pins: SetPins | undefined, key: PinKey, ref: string): ImagePin | undefined {
  if (!pinsHold(pins, key)) return undefined;
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
  return (
    p.set === set &&
    typeof p.templateHash === 'string' &&
    (p.pinKey === undefined || typeof p.pinKey === 'string') &&
    typeof p.images === 'object' &&
    p.images !== null
  );
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
   * Pins `ref` of `set` to `pin` unless a pin of it under this key holds already (the first one
   * stays: children created at once in one pass pin the same id). Returns the pin in force.
   * Writes to one set's file are serialized.
   */
  async pin(set: string, key: PinKey, ref: string, pin: ImagePin): Promise<ImagePin> {
    return this.serialized(set, async (all) => {
      const cur = all.get(set);
      const held = pinOf(cur, key, ref);
      if (held) return held;
      const base = pinsHold(cur, key) ? cur.images : {};
      await this.write(all, { set, ...keyOf(key, cur), images: { ...base, [ref]: pin } });
      return pin;
    });
  }

  /**
   * A file made before pin keys, that holds for the set as it is now (its template unchanged),
   * gets the set's pin key: from then on an edit that re-runs no child keeps its pins. True when
   * written. The writer's (a pass, a controller batch) before it plans.
   */
  async upgrade(set: string, key: PinKey): Promise<boolean> {
    if (key.pinKey === undefined) return false;
    const cur = this.loadAll().get(set);
    if (!cur || cur.pinKey !== undefined || !pinsHold(cur, key)) return false;
    return this.serialized(set, async (all) => {
      const now = all.get(set);
      if (!now || now.pinKey !== undefined || !pinsHold(now, key)) return false;
      await this.write(all, { ...now, pinKey: key.pinKey as string });
      return true;
    });
  }

  private async write(all: Map<string, SetPins>, updated: SetPins): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true });
    await writeFileAtomic(path.join(this.dir, `${updated.set}.json`), `${JSON.stringify(updated, null, 2)}\n`);
    all.set(updated.set, updated);
  }

  private serialized<T>(set: string, run: (all: Map<string, SetPins>) => Promise<T>): Promise<T> {
    const prev = this.chain.get(set) ?? Promise.resolve();
    const next = prev.then(() => run(this.loadAll() as Map<string, SetPins>));
    this.chain.set(
      set,
      next.catch(() => undefined),
    );
    return next;
  }
}

/** The key a file is written under: the set's now (a pin of a key that no longer holds starts afresh). */
function keyOf(key: PinKey, cur: SetPins | undefined): Pick<SetPins, 'templateHash' | 'pinKey'> {
  const templateHash = key.templateHash ?? cur?.templateHash ?? '';
  return { templateHash, ...(key.pinKey !== undefined ? { pinKey: key.pinKey } : {}) };
}
