/** dockerode loads without ssh2 and gRPC; they load, for real, on first use. */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { deferredModuleFiles } from '../../../src/engine/docker/load-dockerode';

const MODULE = path.resolve(__dirname, '../../../src/engine/docker/load-dockerode.ts');

/** Runs `body` in a fresh node (this process may have loaded dockerode directly already). */
function fresh(body: string): Record<string, unknown> {
  const code = `
    const { Agent } = require('node:http');
    const { deferredModuleFiles, loadDockerode } = require(${JSON.stringify(MODULE)});
    const loaded = (pkg) => Object.keys(require.cache).some((k) => k.includes('/node_modules/' + pkg + '/'));
    const out = {};
    ${body}
    process.stdout.write(JSON.stringify(out));`;
  return JSON.parse(execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', code], { encoding: 'utf8' })) as Record<string, unknown>;
}

describe('engine/docker/load-dockerode', () => {
  it('stands in for docker-modem/lib/ssh.js, dockerode/lib/session.js and tar-fs, which exist', () => {
    const files = deferredModuleFiles();
    expect(files.map((f) => f.split('/node_modules/')[1])).to.deep.equal([
      'docker-modem/lib/ssh.js',
      'dockerode/lib/session.js',
      'tar-fs/index.js',
      'docker-modem/lib/http_duplex.js',
    ]);
  });

  it("loads docker-modem's HttpDuplex (and readable-stream) only when a connection is hijacked: `new` on the stand-in makes a real one", () => {
    const out = fresh(`
      const D = loadDockerode();
      out.modem = typeof new D({ socketPath: '/nonexistent.sock' }).modem;
      out.streamBefore = loaded('readable-stream');
      const HttpDuplex = require(deferredModuleFiles()[3]);
      const { PassThrough } = require('node:stream');
      const d = new HttpDuplex(new PassThrough(), new PassThrough());
      out.real = d instanceof require.cache[deferredModuleFiles()[3]].exports;
      out.duplex = typeof d.connect === 'function' && typeof d._read === 'function' && typeof d.pipe === 'function';
      out.streamAfter = loaded('readable-stream');`);
    expect(out).to.deep.equal({ modem: 'object', streamBefore: false, real: true, duplex: true, streamAfter: true });
  });

  it('loads tar-fs (and tar-stream) only when dockerode packs something: its pack is the real one', () => {
    const out = fresh(`
      const D = loadDockerode();
      out.modem = typeof new D({ socketPath: '/nonexistent.sock' }).modem;
      // (the stand-in itself sits in the module cache under tar-fs's file name: tar-stream tells)
      out.tarBefore = loaded('tar-stream');
      const tar = require(deferredModuleFiles()[2]);
      const pack = tar.pack(require('node:os').tmpdir(), { entries: [] });
      out.stream = typeof pack.pipe;
      pack.destroy();
      out.tarAfter = loaded('tar-stream');`);
    expect(out).to.deep.equal({ modem: 'object', tarBefore: false, stream: 'function', tarAfter: true });
  });

  it('gives a working dockerode without ssh2 or gRPC; the SSH transport loads ssh2 when used', () => {
    const out = fresh(`
      const D = loadDockerode();
      out.modem = typeof new D({ socketPath: '/nonexistent.sock' }).modem;
      out.ssh2Before = loaded('ssh2');
      out.grpcBefore = loaded('@grpc/grpc-js');
      const agent = require.cache[deferredModuleFiles()[0]].exports({ host: '127.0.0.1', port: 1 });
      out.agent = agent instanceof Agent;
      out.ssh2After = loaded('ssh2');`);
    expect(out).to.deep.equal({ modem: 'object', ssh2Before: false, grpcBefore: false, agent: true, ssh2After: true });
  });
});
