/**
 * berth keeps fixture digests in a cache folder (src/spec/digest-store.ts): the tests' go to a
 * folder of this run's own, removed at the end, never the user's ~/.cache/berth. Set on import
 * (before any test loads a spec); child processes (the CLI) inherit it.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

process.env.BERTH_CACHE_DIR ||= path.join(os.tmpdir(), `berth-test-cache-${process.env.BERTH_TEST_RUN ?? process.pid}`);

/** Removes this run's cache folder. */
export async function removeTestCache(): Promise<void> {
  const dir = process.env.BERTH_CACHE_DIR;
  if (dir && path.basename(dir).startsWith('berth-test-cache-')) await fs.rm(dir, { recursive: true, force: true });
}

/** Root hooks for the pure tests (the whole run's are test/hooks.ts, which removes it too). */
export const mochaHooks = {
  async afterAll(): Promise<void> {
    await removeTestCache();
  },
};
