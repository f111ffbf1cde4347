/** The engine contract's harness (test/contract/engine.contract.ts) for a real engine, over a dockerode client of it. */
import type Dockerode from 'dockerode';
import type { ContractHarness } from '../contract/engine.contract';
import { createDockerEngine } from '../../src/engine/docker';
import { newInstance, TEST_IMAGE, TEST_LABEL, TEST_RUN } from './engine';
import { waitFor } from './wait';

export function realEngineHarness(
  docker: Dockerode,
  o: { before: () => Promise<void>; after: () => Promise<void>; registry?: ContractHarness['registry'] },
): ContractHarness {
  const engine = createDockerEngine(docker);
  const exitedWith = (what: string, id: string, code: number) =>
    waitFor(
      `container ${id.slice(0, 12)} to ${what}`,
      async () => {
        const s = (await engine.containers.inspect(id)).runState;
        return !s.running && s.status === 'exited' && s.exitCode === code;
      },
      { timeoutMs: 15_000 },
    );
  return {
    engine,
    image: TEST_IMAGE,
    labels: { [TEST_LABEL]: TEST_RUN },
    name: (tag) => newInstance(`contract-${tag}`),
    async exited(id, code) {
      await exitedWith(`exit with ${code}`, id, code);
    },
    async oomKilled(id) {
      await exitedWith('be OOM-killed', id, 137);
    },
    async tag(source, ref) {
      const [repo, tag] = [ref.slice(0, ref.lastIndexOf(':')), ref.slice(ref.lastIndexOf(':') + 1)];
      await docker.getImage(source).tag({ repo, tag });
    },
    async untag(ref) {
      await docker.getImage(ref).remove();
    },
    // a commit of a container made from the tag's image (or the suite's): the new image's parent is
    // the one it was made from, on every image store and builder (a build would need one)
    async rebuild(ref) {
      const from = await docker
        .getImage(ref)
        .inspect()
        .then(
          () => ref,
          () => TEST_IMAGE,
        );
      const c = await docker.createContainer({ Image: from, Cmd: ['true'], Labels: { [TEST_LABEL]: TEST_RUN } });
      try {
        const [repo, tag] = [ref.slice(0, ref.lastIndexOf(':')), ref.slice(ref.lastIndexOf(':') + 1)];
        await c.commit({ repo, tag, changes: `LABEL dev.berth.contract-commit=${Date.now()}` });
      } finally {
        await c.remove({ force: true });
      }
      return (await docker.getImage(ref).inspect()).Id;
    },
    async removeBuilt(ref) {
      // the tag's image, and the untagged parents only it held (the engine prunes them)
      await docker.getImage(ref).remove();
    },
    before: o.before,
    after: o.after,
    ...(o.registry ? { registry: o.registry } : {}),
  };
}
