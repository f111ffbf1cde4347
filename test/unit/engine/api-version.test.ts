/**
 * The Engine API version berth talks (src/engine/docker/api-version.ts): min(the engine's, the
 * newest berth is tested with), asked once per client; an engine below the oldest tested one is
 * refused. Over a stub engine on a socket file of the test's own that answers /version as told
 * and records every path it is asked (no engine needed).
 */
import { expect } from 'chai';
import Dockerode from 'dockerode';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../../src/cli/index';
import { bufferIo } from '../../../src/cli/io';
import { ENGINE_API } from '../../../src/constants';
import { compareApi, negotiateApi } from '../../../src/engine/docker/api-version';
import { createDockerEngine } from '../../../src/engine/docker';
import { EngineTooOldError } from '../../../src/engine/errors';

interface Stub {
  socket: string;
  paths: string[];
  close(): Promise<void>;
}

async function stubEngine(
  version: string,
  api: string,
  driverStatus: [string, string][] = [['Backing Filesystem', 'extfs']],
  o: { pingHeader?: boolean } = {},
): Promise<Stub> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-api-'));
  const socket = path.join(dir, 'd.sock');
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    const p = (req.url ?? '').replace(/^\/v[0-9.]+/, '').split('?')[0];
    res.setHeader('content-type', 'application/json');
    if (p === '/version') return res.end(JSON.stringify({ Version: version, ApiVersion: api, MinAPIVersion: '1.12' }));
    if (p === '/_ping') {
      if (o.pingHeader !== false) res.setHeader('api-version', api);
      return res.end('OK');
    }
    if (p === '/info') return res.end(JSON.stringify({ Driver: 'overlay2', DriverStatus: driverStatus, DockerRootDir: '/var/lib/docker' }));
    if (p === '/containers/json') return res.end('[]');
    res.statusCode = 404;
    res.end(JSON.stringify({ message: 'not here' }));
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    socket,
    paths,
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

describe('the Engine API version berth talks', function () {
  it('is min(the engine’s, the newest berth knows); below the oldest tested one, refused', function () {
    expect(negotiateApi('1.41', '20.10.24', 'x')).to.equal('1.41');
    expect(negotiateApi('1.45', '26.1.5', 'x')).to.equal('1.45');
    expect(negotiateApi(ENGINE_API.newest, '28.5.2', 'x')).to.equal(ENGINE_API.newest);
    expect(negotiateApi('1.52', '29.0.0', 'x')).to.equal(ENGINE_API.newest);
    expect(negotiateApi('2.3', '40.0.0', 'x')).to.equal(ENGINE_API.newest);
    expect(compareApi('1.9', '1.41')).to.be.below(0);
    const old = (() => {
      try {
        negotiateApi('1.40', '19.03.15', 'unix:///x.sock');
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(old).to.be.instanceOf(EngineTooOldError);
    expect((old as Error).message).to.equal(
      'the Docker engine at unix:///x.sock is 19.03.15 (API 1.40), older than the oldest engine berth is tested with, Docker Engine 20.10 (API 1.41): upgrade the engine',
    );
    expect(() => negotiateApi(undefined, undefined, 'x')).to.throw(EngineTooOldError, /of an unknown version \(API unknown\)/);
    expect(() => negotiateApi('latest', '1', 'x')).to.throw(EngineTooOldError);
  });

  let stub: Stub | undefined;
  afterEach(async function () {
    await stub?.close();
    stub = undefined;
  });

  it("is asked once, by the first call (calls made meanwhile wait for it): /_ping's API-Version, then in front of every path", async function () {
    stub = await stubEngine('26.1.5', '1.45');
    const engine = createDockerEngine(new Dockerode({ socketPath: stub.socket }));
    await Promise.all([engine.containers.list([]), engine.containers.list([]), engine.ping()]);
    await engine.containers.list([]);
    expect(stub.paths[0]).to.equal('/_ping');
    expect(
      stub.paths.slice(1).every((p) => p.startsWith('/v1.45/')),
      stub.paths.join(' '),
    ).to.equal(true);
    expect(await engine.version()).to.deep.equal({ version: '26.1.5', apiVersion: '1.45', talks: '1.45' });
    expect(stub.paths.filter((p) => !p.startsWith('/v1.45/'))).to.deep.equal(['/_ping']);
  });

  it('an engine whose /_ping names no API version is asked its /version', async function () {
    stub = await stubEngine('20.10.24', '1.41', undefined, { pingHeader: false });
    const engine = createDockerEngine(new Dockerode({ socketPath: stub.socket }));
    await engine.containers.list([]);
    expect(stub.paths.map((p) => p.split('?')[0])).to.deep.equal(['/_ping', '/version', '/v1.41/containers/json']);
    expect(await engine.version()).to.deep.equal({ version: '20.10.24', apiVersion: '1.41', talks: '1.41' });
  });

  it('a newer engine is talked to in the newest version berth knows, and says so', async function () {
    stub = await stubEngine('29.1.0', '1.52', [['driver-type', 'io.containerd.snapshotter.v1']]);
    const engine = createDockerEngine(new Dockerode({ socketPath: stub.socket }));
    await engine.containers.list([]);
    expect(stub.paths.at(-1)).to.match(new RegExp(`^/v${ENGINE_API.newest}/containers/json`));
    expect(await engine.version()).to.deep.equal({ version: '29.1.0', apiVersion: '1.52', talks: ENGINE_API.newest });
    expect(await engine.local?.storage()).to.deep.include({ driver: 'overlay2', imageStore: 'containerd' });
  });

  it('an engine older than the oldest tested one fails every call with one clear message; berth version says so and exits 1', async function () {
    stub = await stubEngine('19.03.15', '1.40');
    const engine = createDockerEngine(new Dockerode({ socketPath: stub.socket }));
    const err = await engine.containers.list([]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(EngineTooOldError);
    expect((err as Error).message).to.include('is 19.03.15 (API 1.40)');
    expect(stub.paths.every((p) => p === '/_ping' || p === '/version')).to.equal(true);
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = `unix://${stub.socket}`;
    try {
      const io = bufferIo();
      const code = await run(['node', 'berth', 'version'], io);
      expect(code).to.equal(1);
      expect(io.stdout).to.include(
        `engine refused: the Docker engine at unix://${stub.socket} (DOCKER_HOST) is 19.03.15 (API 1.40), older than the oldest engine berth is tested with`,
      );
      const json = bufferIo();
      expect(await run(['node', 'berth', 'version', '-o', 'json'], json)).to.equal(1);
      expect((JSON.parse(json.stdout) as { engine: object }).engine).to.deep.include({ tooOld: true });
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });
});
