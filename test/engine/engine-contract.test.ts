/** The engine contract (test/contract/engine.contract.ts) on the real engine, through the Docker adapter. */
import { engineContract } from '../contract/engine.contract';
import { docker, newInstance, removeTestResources, requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN, testEngine } from '../support/engine';
import { waitFor } from '../support/wait';

engineContract('the real engine', () => {
  const engine = testEngine();
  return {
    engine,
    image: TEST_IMAGE,
    labels: { [TEST_LABEL]: TEST_RUN },
    name: (tag) => newInstance(`contract-${tag}`),
    async exited(id, code) {
      await waitFor(
        `container ${id.slice(0, 12)} to exit with ${code}`,
        async () => {
          const s = (await engine.containers.inspect(id)).runState;
          return !s.running && s.status === 'exited' && s.exitCode === code;
        },
        { timeoutMs: 15_000 },
      );
    },
    async oomKilled(id) {
      await waitFor(
        `container ${id.slice(0, 12)} to be OOM-killed`,
        async () => {
          const s = (await engine.containers.inspect(id)).runState;
          return !s.running && s.status === 'exited' && s.exitCode === 137;
        },
        { timeoutMs: 15_000 },
      );
    },
    async tag(source, ref) {
      const [repo, tag] = [ref.slice(0, ref.lastIndexOf(':')), ref.slice(ref.lastIndexOf(':') + 1)];
      await docker.getImage(source).tag({ repo, tag });
    },
    async untag(ref) {
      await docker.getImage(ref).remove();
    },
    before: requireEngine,
    async after() {
      await removeTestResources();
    },
  };
});
