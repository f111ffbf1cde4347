import { expect } from 'chai';
import { thenTearDown } from '../../support/teardown';

describe('thenTearDown: a test body, then its teardown', () => {
  it("reports the body's error when both fail, the teardown's failure added to it, and the teardown ran", async () => {
    const first = new Error('no relist among []');
    let tornDown = false;
    const err = await thenTearDown(
      () => Promise.reject(first),
      async () => {
        tornDown = true;
        throw new Error('clean exited 1');
      },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.equal(first);
    expect((err as Error).message).to.equal('no relist among []\n(and then the teardown failed too: clean exited 1)');
    expect(tornDown).to.equal(true);
  });

  it("keeps an assertion's expected and actual when it adds the teardown's failure", async () => {
    const err = await thenTearDown(
      async () => {
        expect(1, 'the run').to.equal(2);
      },
      () => Promise.reject(new Error('clean exited 1')),
    ).then(
      () => undefined,
      (e: unknown) => e as Error & { expected: unknown; actual: unknown },
    );
    expect([err?.actual, err?.expected]).to.deep.equal([1, 2]);
    expect(err?.message).to.match(/^the run: expected 1 to equal 2\n\(and then the teardown failed too: clean exited 1\)$/);
  });

  it("reports the body's error alone when the teardown works, and the teardown's when it alone fails", async () => {
    const body = await thenTearDown(
      () => Promise.reject(new Error('body')),
      async () => undefined,
    ).catch((e: Error) => e.message);
    expect(body).to.equal('body');
    const teardown = await thenTearDown(
      async () => 'value',
      () => Promise.reject(new Error('clean exited 1')),
    ).catch((e: Error) => e.message);
    expect(teardown).to.equal('clean exited 1');
  });

  it("returns the body's value once the teardown is done", async () => {
    const order: string[] = [];
    const v = await thenTearDown(
      async () => (order.push('body'), 42),
      async () => void order.push('teardown'),
    );
    expect([v, order]).to.deep.equal([42, ['body', 'teardown']]);
  });

  it('tells a thrown non-Error body with the teardown failure, keeping it as the cause', async () => {
    const err = await thenTearDown(
      () => Promise.reject('a string'),
      () => Promise.reject(new Error('clean exited 1')),
    ).catch((e: Error) => e);
    expect(err.message).to.equal('a string\n(and then the teardown failed too: clean exited 1)');
    expect(err.cause).to.equal('a string');
  });
});
