/** instrumentEngine and readOnlyEngine over the fake engine (a class: its own calls live on the prototype). */
import { expect } from 'chai';
import { CallCounter, instrumentEngine, readOnlyEngine } from '../../../src/engine/wrap';
import { FakeEngine } from '../../support/fake-engine';

describe('engine wrappers', () => {
  it("count the engine's own calls (ping, version, boot) as kind engine, beside the resource calls", async () => {
    const fake = new FakeEngine();
    const counter = new CallCounter();
    const seen: string[] = [];
    const engine = instrumentEngine(fake, (c) => {
      counter.listener(c);
      seen.push(`${c.kind}.${c.op}${c.error ? ' error' : ''}`);
    });
    await engine.ping();
    await engine.version();
    const boot = await engine.boot?.();
    expect(boot).to.deep.equal(await fake.boot());
    await engine.containers.list([]);
    expect(counter.snapshot()).to.deep.equal({ 'containers.list': 1, 'engine.boot': 1, 'engine.ping': 1, 'engine.version': 1 });
    expect(counter.total).to.equal(4);
    expect(counter.mutating).to.equal(0);
    expect(seen).to.deep.equal(['engine.ping', 'engine.version', 'engine.boot', 'containers.list']);
  });

  it('pass abandon on to the engine under them (not counted: it is not a call)', async () => {
    const fake = new FakeEngine();
    const counter = new CallCounter();
    const engine = readOnlyEngine(instrumentEngine(fake, counter.listener));
    engine.abandon?.('stopping');
    const err = await fake.containers.list([]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).message).to.match(/given up: stopping/);
    expect(counter.total).to.equal(0);
  });

  it('pass a failed call on, told to the listener with its error', async () => {
    const fake = new FakeEngine();
    fake.fail('ping', { error: new Error('down') });
    const errors: unknown[] = [];
    const engine = instrumentEngine(fake, (c) => errors.push(c.error));
    const err = await engine.ping().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).message).to.equal('down');
    expect(errors).to.have.length(1);
    expect((errors[0] as Error).message).to.equal('down');
  });

  it("a read-only engine still answers the engine's own calls and refuses mutations", async () => {
    const ro = readOnlyEngine(new FakeEngine());
    await ro.ping();
    expect(await ro.boot?.()).to.have.property('id');
    const err = await ro.volumes.create({ name: 'v', labels: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).message).to.match(/read-only/);
  });
});
