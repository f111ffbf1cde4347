/**
 * One look at a time: `coalesced(step)` runs `step` at most once at a time; a call that comes
 * while it runs makes it run once more after (however many came), and resolves with that run.
 */
export function coalesced(step: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  const loop = async (): Promise<void> => {
    try {
      do {
        again = false;
        await step();
      } while (again);
    } finally {
      running = undefined;
    }
  };
  return () => {
    if (running) {
      again = true;
      return running;
    }
    return (running = loop());
  };
}
