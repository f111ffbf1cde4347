/**
 * Root hooks for the whole run: each suite cleans up after itself by label; this final check
 * counts what this test run left on the engine, removes it (by this run's labels only, never
 * anything else), and fails the run if there was anything to remove: a leak is a defect.
 * The test swarm (test/support/swarm.ts), when a test started it, is ended here and must leave
 * nothing behind on the host, nor have been found with a node down or drained when a test file
 * began; nor may a sandbox's temp folder stay (test/support/sandbox.ts), nor a test registry's
 * process or the engine's trust entry for it (test/support/registry.ts).
 * A run cut short (SIGTERM or SIGINT: scripts/test-lanes.mjs at its time limit, or Ctrl-C) does
 * the same clean-up before it exits, so a cut run leaves as little as a finished one.
 */
import { removeTestCache } from './cache-dir';
import { countTestResources, removeTestResources, TEST_RUN } from './support/engine';
import { removeLeftoverRegistries } from './support/registry';
import { removeLeftoverSandboxes } from './support/sandbox';
import { endSharedSwarm, sharedSwarmMended } from './support/swarm';

/** Removes what this run left (engine, test swarm, cache, registries, sandboxes); returns the problems: what there was to remove. */
async function cleanUp(): Promise<string[]> {
  // Every check runs and removes what it found before the run fails with all of them.
  const problems: string[] = [];
  const mended = sharedSwarmMended();
  if (mended.length > 0) problems.push(`the test swarm was not whole when a test file began (a test before it left it so; mended then): ${mended.join(' | ')}`);
  const traces = await endSharedSwarm();
  const left = await countTestResources();
  // Always: it also removes the source bindings tests leave by design (not counted as a leak).
  await removeTestResources();
  if (left > 0) {
    problems.push(`test run ${TEST_RUN} left ${left} resources on the engine (removed now by label)`);
  }
  if (traces.length > 0) problems.push(`the test swarm left ${traces.join(', ')} behind`);
  await removeTestCache();
  const registries = await removeLeftoverRegistries();
  if (registries.length > 0) problems.push(`test run ${TEST_RUN} left test registries behind (removed now): ${registries.join(', ')}`);
  const folders = await removeLeftoverSandboxes();
  if (folders.length > 0) problems.push(`test run ${TEST_RUN} left ${folders.length} sandbox folders (removed now): ${folders.slice(0, 5).join(', ')}`);
  return problems;
}

for (const [signal, code] of [
  ['SIGTERM', 143],
  ['SIGINT', 130],
] as const) {
  process.once(signal, () => {
    process.stderr.write(`\ntest run ${TEST_RUN}: ${signal}: cleaning up, then exiting ${code}\n`);
    void cleanUp()
      .catch((err: unknown) => [String(err)])
      .then((problems) => {
        if (problems.length > 0) process.stderr.write(`test run ${TEST_RUN}, cut short: ${problems.join('; ')}\n`);
        process.exit(code);
      });
  });
}

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(120000);
    const problems = await cleanUp();
    if (problems.length > 0) throw new Error(problems.join('; '));
  },
};
