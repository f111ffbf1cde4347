/**
 * The images a build starts `FROM` (pure), as the pull gate sees them: a build's base images are
 * pulled by berth (its puller, its back-off, its credentials: docs/CONTRACT.md "Images from
 * registries") before the build is asked for, never by the engine's builder. Nothing is asked
 * when the build's own image is on the engine already (nothing will be built). `Never`, or no
 * puller: a FROM image the engine lacks is missing (Blocked/ImageMissing), as an attempt's own
 * image would be.
 */
import { isImageId } from '../observe/images';
import type { NormalizedBuild, PullPolicy } from '../spec/types';
import type { GatedImage } from './pull-gate';

export interface BuildBases {
  gated: GatedImage[];
  missing: { image: string; message: string }[];
}

/**
 * `build`'s FROM images under `policy`: `has(ref)` says whether the engine holds one, `pulls`
 * whether there is a puller; `of` names the build in messages (`the build`, `the grader's build`).
 */
export function buildBases(build: NormalizedBuild, policy: PullPolicy, of: string, has: (ref: string) => boolean, pulls: boolean): BuildBases {
  const out: BuildBases = { gated: [], missing: [] };
  for (const ref of build.from) {
    const held = has(ref);
    const platform = build.platforms?.[ref];
    if (pulls && policy !== 'Never' && (!held || policy === 'Always') && !isImageId(ref))
      out.gated.push({ ref, shown: ref, policy, held, of, ...(platform ? { platform } : {}) });
    else if (!held)
      out.missing.push({
        image: ref,
        message: `image ${ref} of ${of} (FROM) is not on the engine (${policy === 'Never' ? 'imagePullPolicy is Never: ' : ''}pull, load or tag it)`,
      });
  }
  return out;
}
