/** The proxy's environment: defaults, overrides, and every problem reported at once. */
import { expect } from 'chai';
import { loadConfig } from '../../../src/proxy/config';
import { PROXY_DEFAULTS } from '../../../src/proxy/contract';

describe('proxy/config', () => {
  it('applies the defaults', () => {
    const c = loadConfig({ BERTH_EGRESS_ALLOW: 'a.com:443' });
    expect(c.ok).to.equal(true);
    if (!c.ok) return;
    expect(c.value.port).to.equal(PROXY_DEFAULTS.port);
    expect(c.value.listen).to.equal('0.0.0.0');
    expect(c.value.connectTimeoutMs).to.equal(10_000);
    expect(c.value.allowlist.entries.map((e) => e.text)).to.deep.equal(['a.com:443']);
  });

  it('reads port, listen address and connect timeout', () => {
    const c = loadConfig({
      BERTH_EGRESS_ALLOW: '',
      BERTH_PROXY_PORT: '8888',
      BERTH_PROXY_LISTEN: '127.0.0.1',
      BERTH_PROXY_CONNECT_TIMEOUT_MS: '2500',
    });
    expect(c.ok && c.value).to.deep.include({ port: 8888, listen: '127.0.0.1', connectTimeoutMs: 2500 });
  });

  it('reports every problem, the allowlist unset included', () => {
    const c = loadConfig({ BERTH_PROXY_PORT: '70000', BERTH_PROXY_LISTEN: 'localhost', BERTH_PROXY_CONNECT_TIMEOUT_MS: '0' });
    expect(c.ok).to.equal(false);
    if (c.ok) return;
    expect(c.errors).to.have.length(4);
    expect(c.errors[0]).to.match(/^BERTH_EGRESS_ALLOW is not set/);
    expect(c.errors.join('\n'))
      .to.match(/BERTH_PROXY_PORT="70000"/)
      .and.match(/BERTH_PROXY_LISTEN="localhost"/)
      .and.match(/CONNECT_TIMEOUT_MS="0"/);
  });

  it('names the bad allowlist entries', () => {
    const c = loadConfig({ BERTH_EGRESS_ALLOW: 'ok.com:443,nope' });
    expect(c.ok ? [] : c.errors).to.deep.equal(['BERTH_EGRESS_ALLOW: entry 2 "nope": missing :port']);
  });
});
