/**
 * The images an engine holds, as one pass sees them (one image list: `Snapshot.images`), and
 * what an image reference names among them. Pure. A reference is compared as the engine lists
 * tags: in its short form (`alpine:latest` for `docker.io/library/alpine`), `:latest` when it
 * names no tag; `name@sha256:…` against the images' repo digests; `sha256:<64 hex>` (or the 64
 * hex alone) against their ids.
 */
import { LABELS } from '../constants';
import type { ImageSummary } from '../engine/types';

export interface HeldImage {
  id: string;
  repoDigests: string[];
  /** The build hash of an image berth built (its `dev.berth.build` label). */
  build?: string;
}

export interface ImageIndex {
  /** Tag (short form) or repo digest → the image it names. */
  byRef: ReadonlyMap<string, HeldImage>;
  byId: ReadonlyMap<string, HeldImage>;
}

export function imageIndex(images: readonly ImageSummary[]): ImageIndex {
  const byRef = new Map<string, HeldImage>();
  const byId = new Map<string, HeldImage>();
  for (const i of images) {
    const build = i.labels[LABELS.build];
    const held: HeldImage = { id: i.id, repoDigests: [...(i.repoDigests ?? [])].sort(), ...(build ? { build } : {}) };
    byId.set(i.id, held);
    for (const t of [...i.tags, ...held.repoDigests]) byRef.set(shortRef(t), held);
  }
  return { byRef, byId };
}

const ID = /^(?:sha256:)?([0-9a-f]{64})$/;

/** The image `ref` names in `index`, or undefined when the engine holds none by that name. */
export function resolveImage(index: ImageIndex, ref: string): HeldImage | undefined {
  const id = ID.exec(ref);
  if (id) return index.byId.get(`sha256:${id[1]}`);
  return index.byRef.get(shortRef(ref));
}

/** Whether `ref` is an image id (`sha256:…`): what a set's pinned child is made from. */
export function isImageId(ref: string): boolean {
  return ID.test(ref);
}

/**
 * A reference in the short form the engine lists tags and digests in: Docker Hub's domain and
 * `library/` dropped, `:latest` added to a name with neither tag nor digest.
 */
export function shortRef(ref: string): string {
  const at = ref.indexOf('@');
  let name = at >= 0 ? ref.slice(0, at) : ref;
  const digest = at >= 0 ? ref.slice(at) : '';
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  let tag = '';
  if (colon > slash) {
    tag = name.slice(colon);
    name = name.slice(0, colon);
  }
  const parts = name.split('/');
  const first = parts[0] ?? '';
  const hasDomain = parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasDomain && (first === 'docker.io' || first === 'index.docker.io')) parts.shift();
  else if (hasDomain) return `${name}${digest || tag || ':latest'}`;
  if (parts.length === 2 && parts[0] === 'library') parts.shift();
  return `${parts.join('/')}${digest || tag || ':latest'}`;
}
