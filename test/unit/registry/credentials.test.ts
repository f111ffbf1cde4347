import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CredentialError, registryConfigPath, RegistryCredentials, type HelperRunner } from '../../../src/registry/credentials';
import { isDigestRef, registryOf, repositoryOf } from '../../../src/registry/reference';
import { classifyPull } from '../../../src/engine/errors';

describe('registry credentials (as the docker CLI finds them)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'berth-regcred-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const file = (v: unknown): string => {
    const f = path.join(dir, 'config.json');
    writeFileSync(f, JSON.stringify(v));
    return f;
  };

  it('finds the config file: the flag, BERTH_REGISTRY_CONFIG, DOCKER_CONFIG, ~/.docker', () => {
    expect(registryConfigPath({ HOME: '/h' })).to.equal('/h/.docker/config.json');
    expect(registryConfigPath({ HOME: '/h', DOCKER_CONFIG: '/d' })).to.equal('/d/config.json');
    expect(registryConfigPath({ HOME: '/h', DOCKER_CONFIG: '/d', BERTH_REGISTRY_CONFIG: '/b.json' })).to.equal('/b.json');
    expect(registryConfigPath({ BERTH_REGISTRY_CONFIG: '/b.json' }, '/f.json')).to.equal('/f.json');
  });

  it('auths: auth (base64 user:password), username/password, identitytoken; keys with a scheme match the host', async () => {
    const f = file({
      auths: {
        'reg.example:5000': { auth: Buffer.from('u1:p:1').toString('base64') },
        'https://other.example': { username: 'u2', password: 'p2' },
        'tok.example': { identitytoken: 'tok-3' },
        'https://index.docker.io/v1/': { auth: Buffer.from('hub:hubpw').toString('base64') },
      },
    });
    const c = new RegistryCredentials({ file: f, env: {} });
    expect(await c.forImage('reg.example:5000/evals/py:3')).to.deep.equal({ serveraddress: 'reg.example:5000', username: 'u1', password: 'p:1' });
    expect(await c.forImage('other.example/x')).to.deep.equal({ serveraddress: 'other.example', username: 'u2', password: 'p2' });
    expect(await c.forImage('tok.example/x')).to.deep.equal({ serveraddress: 'tok.example', identitytoken: 'tok-3' });
    expect(await c.forImage('python:3.12')).to.deep.equal({ serveraddress: 'https://index.docker.io/v1/', username: 'hub', password: 'hubpw' });
    expect(await c.forImage('nowhere.example/x')).to.equal(undefined);
    const names = c.secretValues().map((v) => v.name);
    expect(names).to.include('registry-reg.example:5000');
    expect(c.secretValues().map((v) => v.value.toString())).to.include.members(['p:1', 'p2', 'tok-3', 'hubpw']);
  });

  it('credHelpers win over credsStore, which wins over auths; the server goes on stdin (the runner gets it as data)', async () => {
    const asked: string[] = [];
    const run: HelperRunner = async (helper, server) => {
      asked.push(`${helper} ${server}`);
      if (helper === 'tokhelp') return JSON.stringify({ Username: '<token>', Secret: 'id-tok' });
      return JSON.stringify({ Username: `${helper}-user`, Secret: `${helper}-secret` });
    };
    const f = file({
      auths: { 'a.example': { username: 'x', password: 'y' } },
      credHelpers: { 'h.example': 'pass', 't.example': 'tokhelp' },
      credsStore: 'store',
    });
    const c = new RegistryCredentials({ file: f, env: {}, run });
    expect(await c.forImage('h.example/x')).to.deep.equal({ serveraddress: 'h.example', username: 'pass-user', password: 'pass-secret' });
    expect(await c.forImage('t.example/x')).to.deep.equal({ serveraddress: 't.example', identitytoken: 'id-tok' });
    expect(await c.forImage('a.example/x')).to.deep.equal({ serveraddress: 'a.example', username: 'store-user', password: 'store-secret' });
    // asked once within its time to live
    await c.forImage('h.example/y');
    expect(asked).to.deep.equal(['pass h.example', 'tokhelp t.example', 'store a.example']);
  });

  it('a helper that has none is an anonymous pull; one that fails is a CredentialError naming it, not the value', async () => {
    const f = file({ credHelpers: { 'n.example': 'none', 'f.example': 'broken' } });
    const run: HelperRunner = async (helper) => {
      throw new CredentialError(helper === 'none' ? 'credentials not found in native keychain' : `credential helper docker-credential-${helper} failed: boom`);
    };
    const c = new RegistryCredentials({ file: f, env: {}, run });
    expect(await c.forImage('n.example/x')).to.equal(undefined);
    const err = await c.forImage('f.example/x').catch((e: unknown) => e);
    expect(err).to.be.instanceOf(CredentialError);
    expect((err as Error).message).to.contain('docker-credential-broken');
  });

  it('a missing file is no credential; a damaged one is an error naming the file', async () => {
    expect(await new RegistryCredentials({ file: path.join(dir, 'none.json'), env: {} }).forImage('r.example/x')).to.equal(undefined);
    const f = path.join(dir, 'bad.json');
    writeFileSync(f, '{not json');
    const err = await new RegistryCredentials({ file: f, env: {} }).forImage('r.example/x').catch((e: unknown) => e);
    expect((err as Error).message).to.equal(`registry config ${f} is not valid JSON`);
  });
});

describe('image references and pull failures', () => {
  it('the registry of a reference', () => {
    expect(registryOf('python:3.12')).to.equal('docker.io');
    expect(registryOf('library/python')).to.equal('docker.io');
    expect(registryOf('docker.io/library/python')).to.equal('docker.io');
    expect(registryOf('172.17.0.1:5000/evals/x:1')).to.equal('172.17.0.1:5000');
    expect(registryOf('localhost/x')).to.equal('localhost');
    expect(repositoryOf('h:5/a/b:1')).to.equal('h:5/a/b');
    expect(repositoryOf(`h:5/a/b@sha256:${'a'.repeat(64)}`)).to.equal('h:5/a/b');
    expect(isDigestRef(`h:5/a/b@sha256:${'a'.repeat(64)}`)).to.equal(true);
  });

  it('classifies by status, then by the registry error code the engine passes on', () => {
    expect(classifyPull(404, 'manifest for x not found: manifest unknown')).to.equal('not-found');
    expect(classifyPull(500, 'unauthorized: authentication required')).to.equal('unauthorized');
    expect(classifyPull(500, 'Head "https://r/v2/x/manifests/1": no basic auth credentials')).to.equal('unauthorized');
    expect(classifyPull(500, 'toomanyrequests: You have reached your pull rate limit')).to.equal('rate-limited');
    expect(classifyPull(500, 'Get "https://r/v2/": net/http: TLS handshake timeout')).to.equal('unreachable');
    expect(classifyPull(500, 'received unexpected HTTP status: 500 Internal Server Error')).to.equal('other');
  });
});
