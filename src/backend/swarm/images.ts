/**
 * Images on a swarm's nodes (docs/CONTRACT.md "Images from registries"): a node never fails a
 * task for a missing image. Before a run is prepared on a node (runs.ts create), the node is made
 * to hold the run's image: an image a registry holds (the manager's copy has a repo digest) is
 * pulled by the node's own engine with the credential (by digest when the run names an id: a
 * set's pin); an image no registry holds (built or loaded on the manager) is copied to the node
 * through the engines' APIs (`docker save` on the manager, `docker load` on the node), once per
 * node and image id however many runs ask at once. The service is created with the credential
 * too (X-Registry-Auth), as the CLI's --with-registry-auth does.
 */
import type { Engine, RegistryAuth } from '../../engine/types';
import { isNotFound } from '../../engine/errors';
import { repositoryOf } from '../../registry/reference';
import type { NodeHandle } from './nodes';

/** A credential for an image reference (the backend's registry credentials); none: anonymous. */
export type CredentialFor = (ref: string) => Promise<RegistryAuth | undefined>;

const ID = /^(?:sha256:)?[0-9a-f]{64}$/;

export class NodeImages {
  /** Node id + image id → the placement under way or done (a failed one is forgotten). */
  private readonly placed = new Map<string, Promise<void>>();

  constructor(
    /** The manager's images (what the planner's preflight and the puller see). */
    private readonly manager: Engine['images'],
    readonly credentialFor: CredentialFor = async () => undefined,
  ) {}

  /** Makes node `h` hold `ref` (a tag, `name@sha256:…` or an image id) as the manager has it. */
  async ensure(h: NodeHandle, ref: string): Promise<void> {
    const on = await h.engine.images.inspect(ref).then(
      (i) => i.id,
      (err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)),
    );
    const m = await this.manager.inspect(ref);
    if (on === m.id) return;
    const key = `${h.node.id}\0${m.id}`;
    let p = this.placed.get(key);
    if (!p) {
      p = this.place(h, ref, m.id, m.repoDigests ?? []);
      this.placed.set(key, p);
      p.catch(() => this.placed.delete(key));
    }
    await p;
  }

  private async place(h: NodeHandle, ref: string, id: string, repoDigests: readonly string[]): Promise<void> {
    const pull = h.engine.images.pull.bind(h.engine.images);
    // a registry holds it: the node pulls it, by the digest the manager's copy came with
    const digest = ID.test(ref) ? repoDigests[0] : (repoDigests.find((d) => repositoryOf(d) === repositoryOf(ref)) ?? undefined);
    if (repoDigests.length > 0) {
      const auth = await this.credentialFor(digest ?? ref);
      await pull(ID.test(ref) ? (digest as string) : ref, auth ? { auth } : {});
      const got = await h.engine.images.inspect(ref).catch(() => undefined);
      if (got?.id === id || ID.test(ref)) return;
    }
    // no registry holds it (or the node's pull gave another id): copied from the manager
    await h.engine.images.load(await this.manager.save(ref));
  }
}
