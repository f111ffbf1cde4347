/**
 * imageProvenance: which image bytes a reference (or an id) names on an engine, as a status
 * record keeps it (ImageProvenance). Shared by the main container's create (execute/create.ts)
 * and anything else that records an image it ran (a grader).
 */
import { isNotFound } from '../engine/errors';
import type { Engine } from '../engine/types';
import type { ImageProvenance } from '../status/types';

/**
 * `ref`: the image as the spec names it. `id`: the id the engine actually used, when known (a
 * container's inspect `Image`): the image is then inspected by that id, so a tag moved since does
 * not change the answer. Without it, `ref` is inspected and its id taken. An image the engine no
 * longer holds (removed since the create) keeps the id it was given, with no repo digests; any
 * other failure is thrown. One image inspect.
 */
export async function imageProvenance(engine: Engine, ref: string, id?: string): Promise<ImageProvenance> {
  try {
    const i = await engine.images.inspect(id ?? ref);
    return { ref, id: i.id, repoDigests: [...(i.repoDigests ?? [])].sort() };
  } catch (err) {
    if (id !== undefined && isNotFound(err)) return { ref, id, repoDigests: [] };
    throw err;
  }
}
