/** Waker: a poke (before or during a wait) or the timeout ends a wait; close ends every wait. */
import { expect } from 'chai';
import { Waker } from '../../../src/util/waker';

describe('util/waker', () => {
  it('a poke that came before the wait ends it at once, and counts once', async () => {
    const w = new Waker();
    w.poke();
    const t0 = Date.now();
    await w.wait(5_000);
    expect(Date.now() - t0).to.be.below(1_000);
    let ended = false;
    const second = w.wait(50).then(() => (ended = true));
    await new Promise((r) => setImmediate(r));
    expect(ended, 'the poke was used up by the first wait').to.equal(false);
    await second;
    w.close();
  });

  it('a poke during a wait ends it; without one the wait ends at its time', async () => {
    const w = new Waker();
    const t0 = Date.now();
    setTimeout(() => w.poke(), 20);
    await w.wait(5_000);
    expect(Date.now() - t0).to.be.below(1_000);
    const t1 = Date.now();
    await w.wait(30);
    expect(Date.now() - t1).to.be.at.least(25);
    w.close();
  });

  it('close ends a wait under way and every later one', async () => {
    const w = new Waker();
    const t0 = Date.now();
    setTimeout(() => w.close(), 20);
    await w.wait(5_000);
    await w.wait(5_000);
    expect(Date.now() - t0).to.be.below(1_000);
  });
});
