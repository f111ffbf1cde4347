/**
 * network.credentials: loaded with its defaults, checked (schema and semantics, at file:line:col),
 * hashed only when written, and its secrets kept from the main container unless it asks for them.
 */
import { expect } from 'chai';
import { COMPONENTS, NAMING } from '../../../src/constants';
import { desiredAttempt } from '../../../src/desired/attempt';
import { secretHolders } from '../../../src/plan/ops';
import { EGRESS_PROXY_NAME } from '../../../src/spec/semantic';
import type { LoadedSpec } from '../../../src/spec/types';
import { container, labelsFor } from '../../support/builders';
import { credentialConfigs } from '../../../src/pack/secrets';
import { cleanupTemp, doc, loadOne } from './helpers';

const ISOLATED = `  secrets:
    - {name: key, fromEnv: KEY}
    - {name: ca, fromEnv: CA}
  network:
    mode: isolated
    egress: [pypi.org:443]
`;

describe('spec: network.credentials', () => {
  afterEach(cleanupTemp);

  it('loads with its defaults, the host split and lower-cased, sorted by host', async () => {
    const r = await loadOne(
      doc(
        'c',
        `${ISOLATED}    credentials:
      - {host: 'B.example.com:8443', secret: key, header: X-Api-Key, format: '{}', caSecret: ca}
      - {host: 'a.example.com:443', secret: key}
`,
      ),
    );
    expect(r.errors).to.deep.equal([]);
    expect(r.specs[0]?.spec.credentials).to.deep.equal([
      { host: 'a.example.com', port: 443, secret: 'key', header: 'Authorization', format: 'Bearer {}', caSecret: null },
      { host: 'b.example.com', port: 8443, secret: 'key', header: 'X-Api-Key', format: '{}', caSecret: 'ca' },
    ]);
  });

  it('counts for the hash only when written', async () => {
    const without = await loadOne(doc('c', ISOLATED));
    const empty = await loadOne(doc('c', `${ISOLATED}    credentials: []\n`));
    const one = await loadOne(doc('c', `${ISOLATED}    credentials: [{host: 'a.example.com:443', secret: key}]\n`));
    const other = await loadOne(doc('c', `${ISOLATED}    credentials: [{host: 'a.example.com:443', secret: key, header: X-Key}]\n`));
    expect(empty.specs[0]?.hash).to.equal(without.specs[0]?.hash);
    expect(one.specs[0]?.hash).to.not.equal(without.specs[0]?.hash);
    expect(other.specs[0]?.hash).to.not.equal(one.specs[0]?.hash);
  });

  it('refuses a wildcard, a missing port, a bad header or a format without {} (schema)', async () => {
    const r = await loadOne(
      doc(
        'c',
        `${ISOLATED}    credentials:
      - {host: '*.example.com:443', secret: key}
      - {host: 'a.example.com', secret: key}
      - {host: 'b.example.com:443', secret: key, header: 'X Key'}
      - {host: 'c.example.com:443', secret: key, format: 'Bearer'}
`,
      ),
    );
    expect(r.errors.map((e) => `${e.path} ${e.code}`)).to.deep.equal([
      'spec.network.credentials[0].host schema',
      'spec.network.credentials[1].host schema',
      'spec.network.credentials[2].header schema',
      'spec.network.credentials[3].format schema',
    ]);
  });

  it('names undeclared secrets, a host given twice, a host also in egress, a reserved header and a mode other than isolated, at their line', async () => {
    const r = await loadOne(
      doc(
        'c',
        `  secrets: [{name: key, fromEnv: KEY}]
  network:
    mode: isolated
    egress: ['a.example.com:443']
    credentials:
      - {host: 'a.example.com:443', secret: nope}
      - {host: 'b.example.com:443', secret: key, caSecret: gone}
      - {host: 'b.example.com:8443', secret: key, header: Host}
`,
      ),
    );
    expect(r.errors.map((e) => `${e.line}:${e.col} ${e.path} [${e.code}] ${e.message}`)).to.deep.equal([
      '12:16 spec.network.credentials[0].host [credential] a.example.com:443 is also in network.egress: a credentialed host is reached with plain http:// through the proxy, not tunnelled; remove it from egress',
      '12:45 spec.network.credentials[0].secret [credential] secret "nope" is not declared in spec.secrets',
      '13:60 spec.network.credentials[1].caSecret [credential] secret "gone" is not declared in spec.secrets',
      '14:16 spec.network.credentials[2].host [credential] b.example.com already has a credential (spec.network.credentials[1]); one per host',
      '14:59 spec.network.credentials[2].header [credential] Host is set by the proxy itself; choose another header',
    ]);
    const none = await loadOne(doc('c', `  secrets: [{name: key, fromEnv: KEY}]\n  network:\n    credentials: [{host: 'a.example.com:443', secret: key}]\n`));
    expect(none.errors.map((e) => `${e.path} [${e.code}] ${e.message}`)).to.deep.equal([
      'spec.network.credentials [credential] credentials need network.mode: isolated (mode is none)',
    ]);
  });

  it("gives the credential's secrets to the proxy only, unless the main container's env names one", async () => {
    const r = await loadOne(doc('c', `${ISOLATED}    credentials: [{host: 'a.example.com:443', secret: key, caSecret: ca}]\n`));
    const loaded = r.specs[0];
    if (!loaded) throw new Error(JSON.stringify(r.errors));
    const d = desiredAttempt({ instance: 'i', policy: {} }, loaded, 1, '/tmp/r');
    expect(d.mainSecrets).to.deep.equal([]);
    expect(d.sidecars.map((s) => [s.role, s.credentials.length, s.secrets])).to.deep.equal([['egress-proxy', 1, []]]);
    expect(JSON.stringify(d)).to.not.match(/KEY=|BERTH_PROXY_CREDENTIALS/);
    const asked = await loadOne(doc('c', `${ISOLATED}    credentials: [{host: 'a.example.com:443', secret: key}]\n  env: {K: {secretRef: key}}\n`));
    const l2 = asked.specs[0];
    if (!l2) throw new Error(JSON.stringify(asked.errors));
    expect(desiredAttempt({ instance: 'i', policy: {} }, l2, 1, '/tmp/r').mainSecrets).to.deep.equal(['ca', 'key']);
  });

  it('a credential alone (no egress) still gets the proxy', async () => {
    const r = await loadOne(
      doc('c', `  secrets: [{name: key, fromEnv: KEY}]\n  network: {mode: isolated, credentials: [{host: 'a.example.com:443', secret: key}]}\n`),
    );
    const loaded = r.specs[0];
    if (!loaded) throw new Error(JSON.stringify(r.errors));
    const d = desiredAttempt({ instance: 'i', policy: {} }, loaded, 1, '/tmp/r');
    expect(d.sidecars.map((s) => s.role)).to.deep.equal(['egress-proxy']);
    expect(d.container.create.env.some((e) => e.startsWith('HTTP_PROXY='))).to.equal(true);
  });
});

describe('execute: credentialConfigs', () => {
  const cred = { host: 'a.example.com', port: 443, secret: 'key', header: 'Authorization', format: 'Bearer {}', caSecret: null };

  it('fills {} with the value and {base64} with its base64, dropping one trailing line break', () => {
    const values = [{ name: 'key', value: Buffer.from('user:pa ss\n') }];
    expect(credentialConfigs([cred], values)).to.deep.equal([{ target: 'a.example.com:443', header: 'Authorization', value: 'Bearer user:pa ss' }]);
    expect(credentialConfigs([{ ...cred, format: 'Basic {base64}' }], values)[0]?.value).to.equal(`Basic ${Buffer.from('user:pa ss').toString('base64')}`);
    expect(credentialConfigs([{ ...cred, header: 'X-Key', format: '{}' }], values)[0]?.value).to.equal('user:pa ss');
  });

  it('refuses a value a header cannot carry, naming the secret and not the value', () => {
    expect(() => credentialConfigs([cred], [{ name: 'key', value: Buffer.from('abc\ndef') }])).to.throw(/^secret key: holds a line break or NUL/);
    try {
      credentialConfigs([cred], [{ name: 'key', value: Buffer.from('abc\ndef') }]);
    } catch (err) {
      expect((err as Error).message).to.not.include('abc');
    }
  });
});

describe('spec: sidecars[].egress, credentials and ready', () => {
  afterEach(cleanupTemp);
  const SIDE = `  secrets: [{name: key, fromEnv: KEY}]
  network: {mode: isolated}
  sidecars:
    - name: mcp
      image: mcp:1
`;

  it('a sidecar that writes none of them loads and hashes as before they existed', async () => {
    const r = await loadOne(doc('s', SIDE));
    expect(r.errors).to.deep.equal([]);
    expect(r.specs[0]?.spec.sidecars[0]).to.deep.equal({ name: 'mcp', image: 'mcp:1', command: null, env: {}, secretEnv: {}, secrets: [] });
    expect(r.specs[0]?.hash).to.equal((await loadOne(doc('s', `${SIDE}      egress: []\n      credentials: []\n`))).specs[0]?.hash);
  });

  it('loads them with their defaults, and counts them for the hash', async () => {
    const r = await loadOne(
      doc('s', `${SIDE}      egress: [MCP.example.com:443]\n      credentials: [{host: 'api.example.com:443', secret: key}]\n      ready: {tcp: 8080}\n`),
    );
    expect(r.errors).to.deep.equal([]);
    const sc = r.specs[0]?.spec.sidecars[0];
    expect([sc?.egress, sc?.credentials?.map((c) => c.host), sc?.ready]).to.deep.equal([
      ['mcp.example.com:443'],
      ['api.example.com'],
      { tcp: 8080, deadlineSeconds: 30 },
    ]);
    expect(r.specs[0]?.hash).to.not.equal((await loadOne(doc('s', SIDE))).specs[0]?.hash);
    const loaded = r.specs[0];
    if (!loaded) throw new Error('not loaded');
    // the sidecar's credential's secret goes to the proxy only; the sidecar gets its own port of the proxy
    const d = desiredAttempt({ instance: 'i', policy: {} }, loaded, 1, '/tmp/r');
    expect(d.mainSecrets).to.deep.equal([]);
    const proxy = d.sidecars.find((s) => s.role === 'egress-proxy');
    expect(proxy?.listeners.map((l) => [l.name, l.port, l.egress])).to.deep.equal([['mcp', 3129, ['mcp.example.com:443']]]);
    expect(d.sidecars.find((s) => s.alias === 'mcp')?.create.env).to.include('HTTP_PROXY=http://egress-proxy:3129');
    expect(d.container.create.env).to.include('HTTP_PROXY=http://egress-proxy:3128');
  });

  it('ready needs exactly one probe; its deadline is bounded', async () => {
    const two = await loadOne(doc('s', `${SIDE}      ready: {tcp: 80, log: up}\n`));
    expect(two.errors.map((e) => `${e.path} [${e.code}] ${e.message}`)).to.deep.equal([
      'spec.sidecars[0].ready [sidecar] ready needs exactly one of tcp, log and command (has tcp, log)',
    ]);
    const none = await loadOne(doc('s', `${SIDE}      ready: {deadlineSeconds: 5}\n`));
    expect(none.errors.map((e) => e.message)).to.deep.equal(['ready needs exactly one of tcp, log and command (has none)']);
    const long = await loadOne(doc('s', `${SIDE}      ready: {log: up, deadlineSeconds: 99999}\n`));
    expect(long.errors.map((e) => `${e.path} ${e.code}`)).to.deep.equal(['spec.sidecars[0].ready.deadlineSeconds schema']);
  });
});

describe('desired: sidecars of a network.mode none attempt', () => {
  afterEach(cleanupTemp);

  it('get an internal network with the main container on it and no way out for it; bridge cannot have sidecars', async () => {
    const side = `  network: {mode: none}\n  secrets: [{name: key, fromEnv: KEY}]\n  sidecars:\n    - {name: mcp, image: 'mcp:1', credentials: [{host: 'api.example.com:443', secret: key}]}\n`;
    const r = await loadOne(doc('n', side));
    const loaded = r.specs[0];
    if (!loaded) throw new Error(JSON.stringify(r.errors));
    const d = desiredAttempt({ instance: 'i', policy: {} }, loaded, 1, '/tmp/r');
    expect(d.network?.internal).to.equal(true);
    expect(d.container.create.host.networkMode).to.equal(d.network?.name);
    expect(d.container.create.host.dns).to.deep.equal(['192.0.2.53']);
    expect(d.container.create.env.filter((e) => /_proxy=/i.test(e))).to.deep.equal([]);
    expect(d.sidecars.map((s) => s.role)).to.deep.equal(['egress-proxy', 'sidecar']);
    const plain = await loadOne(doc('p', `  network: {mode: none}\n`));
    const p = plain.specs[0];
    if (!p) throw new Error('not loaded');
    expect(desiredAttempt({ instance: 'i', policy: {} }, p, 1, '/tmp/r').container.create.host.networkMode).to.equal('none');
    const bridge = await loadOne(doc('b', `  network: {mode: bridge}\n  sidecars: [{name: x, image: 'x:1'}]\n`));
    expect(bridge.errors.map((e) => e.message)).to.deep.equal(['sidecars need network.mode isolated or none (mode is bridge)']);
  });
});

describe('plan: the egress proxy holding credentials is a secret holder', () => {
  afterEach(cleanupTemp);

  it('is removed right after the harvest like any container given a secret; without credentials it is not', async () => {
    const withCreds = await loadOne(doc('h', `${ISOLATED}    credentials: [{host: 'a.example.com:443', secret: key, caSecret: ca}]\n`));
    const without = await loadOne(doc('h', ISOLATED));
    const holders = (loaded: LoadedSpec | undefined): string[] => {
      if (!loaded) throw new Error('not loaded');
      const d = desiredAttempt({ instance: 'i', policy: {} }, loaded, 1, '/tmp/r');
      const proxy = container('i', 'h', loaded.hash, {
        name: NAMING.sidecar('i', 'h', EGRESS_PROXY_NAME),
        labels: { ...labelsFor('i', 'h', loaded.hash, 1, COMPONENTS.proxy) },
      });
      const main = container('i', 'h', loaded.hash);
      return secretHolders(d, [main, proxy]).map((c) => c.name);
    };
    // with credentials: the proxy (its configuration holds the value), and not the main container (it got no secret)
    expect(holders(withCreds.specs[0])).to.deep.equal([NAMING.sidecar('i', 'h', EGRESS_PROXY_NAME)]);
    // without: the main container holds both secrets as files, the proxy none
    expect(holders(without.specs[0])).to.deep.equal([NAMING.container('i', 'h')]);
  });
});
