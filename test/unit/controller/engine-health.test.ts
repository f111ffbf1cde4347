/** EngineHealth: down at the first call the engine does not answer, up (and said so) at the first answer. */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { EngineHealth } from '../../../src/controller/engine-health';
import { EngineCallAbandonedError, EngineUnreachableError } from '../../../src/engine/errors';
import { FakeClock } from '../../../src/util/clock';
import { createLogger } from '../../../src/util/log';

describe('controller/engine-health', () => {
  it('goes down on a timeout or refused connection, up on any answer, and logs each change once', async () => {
    const clock = new FakeClock(0);
    let text = '';
    const log = createLogger({ level: 'info', stream: new Writable({ write: (c, _e, cb) => ((text += String(c)), cb()) }) });
    const h = new EngineHealth(log, clock);
    const down = h.whenDown();
    h.record(); // a success
    h.record(new EngineCallAbandonedError('ping', 'stopping')); // says nothing about the engine
    expect(h.healthy).to.equal(true);
    expect(h.problem()).to.equal(undefined);
    const timeout = new EngineUnreachableError('timeout', 'unix:///x.sock (DOCKER_HOST)', 'containers.list', { ms: 500 });
    h.listener({ kind: 'containers', op: 'list', ms: 500, error: timeout });
    h.listener({ kind: 'networks', op: 'list', ms: 500, error: timeout });
    await down;
    expect(h.healthy).to.equal(false);
    clock.advance(12_000);
    expect(h.problem()).to.equal(`${timeout.message} (for 12 s)`);
    h.record(Object.assign(new Error('(HTTP code 404) no such container'), { statusCode: 404 })); // an answer
    expect(h.healthy).to.equal(true);
    await new Promise((r) => setImmediate(r));
    const lines = text.trim().split('\n');
    expect(lines).to.have.length(2);
    expect(lines[0]).to.match(/warn .*did not answer containers\.list within 500 ms \(--engine-timeout\): .*; retrying$/);
    expect(lines[1]).to.match(/info .*engine reachable again after 12 s$/);
  });
});
