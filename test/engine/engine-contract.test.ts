/** The engine contract (test/contract/engine.contract.ts) on the real engine, through the Docker adapter. */
import { engineContract } from '../contract/engine.contract';
import { realEngineHarness } from '../support/contract-harness';
import { docker, removeTestResources, requireEngine, TEST_RUN } from '../support/engine';
import { makeTestImage, removeImage, TestRegistry } from '../support/registry';

engineContract('the real engine', () => {
  let reg: TestRegistry | undefined;
  const made: string[] = [];
  return realEngineHarness(docker, {
    before: requireEngine,
    // the test registry (on the docker0 gateway, which this engine reaches)
    async registry() {
      reg = await TestRegistry.start();
      const local = `berth-test/${TEST_RUN}-contract:1`;
      await makeTestImage(local, 64 * 1024);
      const ref = await reg.push(local, 'contract/x:1');
      made.push(local, ref);
      await removeImage(local);
      return { ref, auth: { username: reg.user.user, password: reg.user.password, serveraddress: reg.host }, missing: `${reg.host}/contract/x:nope` };
    },
    async after() {
      for (const r of made) await removeImage(r);
      await reg?.stop();
      await removeTestResources();
    },
  });
});
