/** The engine contract (test/contract/engine.contract.ts) on the real engine, through the Docker adapter. */
import { engineContract } from '../contract/engine.contract';
import { realEngineHarness } from '../support/contract-harness';
import { docker, removeTestResources, requireEngine } from '../support/engine';

engineContract('the real engine', () =>
  realEngineHarness(docker, {
    before: requireEngine,
    async after() {
      await removeTestResources();
    },
  }),
);
