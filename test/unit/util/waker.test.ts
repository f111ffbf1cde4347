/**
 * Waker: a poke (before or during a wait) or the timeout ends a wait; close ends every wait.
 * The waits a poke or close must end are longer than the test's own time limit: one that ends
 * within the test was ended by them.
 */
import { expect } from 'chai';
import { Waker } from '../../../src/util/waker';

/** Past any test's time limit (mocha's default 2 s, the suite's 30 s). */
const LONG = 120_000;

describe('util/waker', () => {
  it('a poke that came before the wait ends it at once, and counts once', async () => {
    const w = new Waker();
    w.poke();
    await w.wait(LONG);
    let ended = false;
    const second = w.wait(50).then(() => (ended = true));
    await new Promise((r) => setImmediate(r));
    expect(ended, 'the poke was used up by the first wait').to.equal(false);
    await second;
    w.close();
  });

  it('a poke during a wait ends it; without one the wait ends at its time', async () => {
    const w = new Waker();
    setTimeout(() => w.poke(), 20);
    await w.wait(LONG);
    const t1 = Date.now();
    await w.wait(30);
    expect(Date.now() - t1).to.be.at.least(25);
    w.close();
  });

  it('close ends a wait under way and every later one', async () => {
    const w = new Waker();
    setTimeout(() => w.close(), 20);
    await w.wait(LONG);
    await w.wait(LONG);
  });
});
