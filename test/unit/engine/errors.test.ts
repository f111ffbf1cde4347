/** Engine errors: one message for an engine that is not there, where berth looked, no credentials. */
import { expect } from 'chai';
import { envAddress, redactHost } from '../../../src/engine/docker/address';
import { classify, describeEngineError, EngineCallAbandonedError, EngineUnreachableError, isEngineDown, pingFailure } from '../../../src/engine/errors';
import { parseDuration } from '../../../src/util/duration';

describe('engine errors and addresses', () => {
  it('names DOCKER_HOST without credentials, or the default socket', () => {
    expect(envAddress({ DOCKER_HOST: 'unix:///run/user/1000/docker.sock' })).to.equal('unix:///run/user/1000/docker.sock (DOCKER_HOST)');
    expect(envAddress({ DOCKER_HOST: 'tcp://alice:pw@10.0.0.2:2376/?token=x' })).to.equal('tcp://10.0.0.2:2376/ (DOCKER_HOST)');
    expect(envAddress({ DOCKER_HOST: 'ssh://bob@builder' })).to.equal('ssh://builder (DOCKER_HOST)');
    expect(redactHost('not a url//user:pw@host?q')).to.equal('not a url//host');
    expect(envAddress({})).to.equal('unix:///var/run/docker.sock (the default socket)');
  });

  it('classifies and words timeouts and unreachable engines in one place', () => {
    const t = new EngineUnreachableError('timeout', 'unix:///x.sock (DOCKER_HOST)', 'containers.list', { ms: 1500 });
    expect(classify(t)).to.equal('timeout');
    expect(t.code).to.equal('ENGINE_TIMEOUT');
    expect(describeEngineError(t)).to.equal(
      'the Docker engine at unix:///x.sock (DOCKER_HOST) did not answer containers.list within 1.5 s (--engine-timeout): it is overloaded or hung; check it, or give it longer with --engine-timeout',
    );
    const cause = Object.assign(new Error('connect ENOENT /x.sock'), { code: 'ENOENT' });
    const u = new EngineUnreachableError('unavailable', 'unix:///x.sock (DOCKER_HOST)', 'ping', { cause });
    expect(classify(u)).to.equal('unavailable');
    expect(u.message).to.equal(
      'the Docker engine at unix:///x.sock (DOCKER_HOST) cannot be reached: connect ENOENT /x.sock; start the engine, or point DOCKER_HOST at one that runs',
    );
    expect(pingFailure(u)).to.equal(u.message);
    expect([isEngineDown(t), isEngineDown(u), isEngineDown(cause)]).to.deep.equal([true, true, true]);
    const http500 = Object.assign(new Error('(HTTP code 500) server error - boom '), { statusCode: 500, json: { message: 'boom' } });
    expect(isEngineDown(http500)).to.equal(false);
    expect(pingFailure(http500)).to.equal('the Docker engine does not work: boom (HTTP 500)');
    expect(classify(new EngineCallAbandonedError('ping', 'stopping'))).to.equal('other');
  });

  it('reads --engine-timeout durations', () => {
    expect(['500ms', '30s', '2m', '1h', '45', '1.5s'].map((d) => parseDuration(d))).to.deep.equal([500, 30_000, 120_000, 3_600_000, 45_000, 1500]);
    for (const bad of ['', 'soon', '0s', '-1s', '5 minutes', '10d']) expect(parseDuration(bad), bad).to.equal(undefined);
  });
});
