/** Test helper process: takes the lock given on the command line, says "locked", then waits to be killed. */
import { acquireLock } from '../../../src/status/lock';

const [stateDir, instance] = process.argv.slice(2) as [string, string];
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
