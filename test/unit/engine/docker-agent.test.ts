/**
 * The engine client's HTTP agents: no TLS server name to work out per request (Node would test
 * the host against its IPv6 pattern), and shown briefly by util.inspect (docker-modem inspects
 * each request's options, the agent in them, for a debug line).
 */
import { expect } from 'chai';
import http from 'node:http';
import { inspect } from 'node:util';
import { brief, dockerFromEnv, plainAgent } from '../../../src/engine/docker';

describe('engine/docker agents', () => {
  it('the local socket client has an agent of its own with the global agent settings and an empty server name', () => {
    const d = dockerFromEnv({});
    const agent = (d.modem as unknown as { agent?: http.Agent & { options: Record<string, unknown> } }).agent;
    expect(agent).to.be.instanceOf(http.Agent);
    expect(agent).to.not.equal(http.globalAgent);
    const global = (http.globalAgent as unknown as { options: Record<string, unknown> }).options;
    expect(agent?.options).to.include({ ...global, servername: '' });
  });

  it('a request through a plain agent gets no server name worked out from its host', () => {
    const agent = plainAgent({ keepAlive: false });
    const seen: Record<string, unknown>[] = [];
    // What the agent hands on to make the connection: the request's options with the agent's.
    agent.createConnection = ((options: Record<string, unknown>) => {
      seen.push(options);
      throw new Error('no connection in a unit test');
    }) as unknown as typeof agent.createConnection;
    expect(() => http.request({ host: 'localhost', port: 9, path: '/', agent })).to.throw('no connection in a unit test');
    expect(seen).to.have.length(1);
    expect(seen[0]?.servername).to.equal('');
  });

  it('is shown by util.inspect as its kind alone, also with hidden fields and no depth limit', () => {
    const agent = plainAgent({ keepAlive: true });
    expect(inspect({ path: '/x', agent }, { showHidden: true, depth: null })).to.equal("{ path: '/x', agent: [Agent] }");
    const plain = new http.Agent();
    expect(inspect(brief(plain))).to.equal('[Agent]');
  });
});
