import { expect } from 'chai';
import { coalesced } from '../../../src/util/coalesce';

describe('util/coalesce', () => {
  it('runs one step at a time; calls during a step make exactly one more, and resolve with it', async () => {
    let runs = 0;
    let open!: () => void;
    let gate = new Promise<void>((r) => (open = r));
    const check = coalesced(async () => {
      runs++;
      await gate;
    });
    const first = check();
    const second = check();
    const third = check();
    expect(runs).to.equal(1);
    gate = Promise.resolve();
    open();
    await Promise.all([first, second, third]);
    expect(runs).to.equal(2);
    await check();
    expect(runs).to.equal(3);
  });

  it('a step that throws rejects its callers, and the next call runs again', async () => {
    let fail = true;
    const check = coalesced(async () => {
      if (fail) throw new Error('no');
    });
    await check().then(
      () => expect.fail('resolved'),
      (e: Error) => expect(e.message).to.equal('no'),
    );
    fail = false;
    await check();
  });
});
