/** Test helper process: takes the lock given on the command line, says "locked", then waits to be killed. */
import { acquireLock } from '../../../src/status/lock';

const [stateDir, instance] = process.argv.slice(2);
// Loaded by a test runner given a wide glob, argv holds the runner's flags: take no lock there.
if (!stateDir || !instance || stateDir.startsWith('-') || instance.startsWith('-')) {
  process.stderr.write('usage: hold-lock.fixture.ts STATE_DIR INSTANCE\n');
  process.exit(2);
}
acquireLock(stateDir, instance).then(
  (lock) => {
    process.stdout.write(`locked ${lock.info.pid}\n`);
    setInterval(() => undefined, 60_000);
  },
  (err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  },
);
