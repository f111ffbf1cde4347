/**
 * The host check (issue 54): an engine that would not isolate an attempt (here one whose default
 * runtime berth does not know to isolate; this dockerd, 20.10, takes no `--seccomp-profile
 * unconfined`, and unit tests judge the seccomp facts) is refused by
 * `reconcile` (both modes) before anything is planned, exit 1 naming what it lacks, unless
 * `--allow-weak-isolation`; `berth version` says what it found. A private engine of the test's own.
 */
import { expect } from 'chai';
import { run } from '../../src/cli/index';
import { bufferIo } from '../../src/cli/io';
import { requireEngine } from '../support/engine';
import { PrivateEngine } from '../support/private-engine';
import { Sandbox } from '../support/sandbox';

describe('an engine that would not isolate an attempt is refused (private engine)', function () {
  this.timeout(120_000);
  before(requireEngine);
  const pe = new PrivateEngine('weak', { extraArgs: ['--add-runtime=hostish=runc', '--default-runtime=hostish'] });
  let sb: Sandbox;
  before(async function () {
    await pe.start();
    sb = await Sandbox.create('weak');
  });
  after(async function () {
    await sb?.destroy();
    await pe.destroy();
  });

  // the CLI finds the engine as the docker CLI does: DOCKER_HOST names the private one
  const cli = async (...args: string[]) => {
    const io = bufferIo();
    const was = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = `unix://${pe.socket}`;
    try {
      const code = await run(['node', 'berth', ...args, ...sb.globalArgs()], io);
      return { code, stdout: io.stdout, stderr: io.stderr };
    } finally {
      if (was === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = was;
    }
  };

  it('version says what it found; reconcile --once, --once --wait and the controller exit 1 before anything changes; --allow-weak-isolation goes on, warned', async function () {
    const v = await cli('version');
    expect(v.code, v.stderr).to.equal(0);
    expect(v.stdout).to.match(/^isolation: seccomp default, .*runtime hostish: WEAK, reconcile refuses to run attempts here without --allow-weak-isolation: /m);
    const j = JSON.parse((await cli('version', '-o', 'json')).stdout) as { engine: { isolation: { defaultRuntime: string; weak: string[] } } };
    expect(j.engine.isolation.defaultRuntime).to.equal('hostish');
    expect(j.engine.isolation.weak).to.have.length(1);
    await sb.write('a.yaml', sb.attempt('a', 'true'));
    for (const args of [['reconcile', '--once'], ['reconcile', '--once', '--wait'], ['reconcile']]) {
      const r = await cli(...args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(1);
      expect(r.stderr).to.match(/the engine would not isolate an attempt: its default runtime hostish is not one berth knows to isolate/);
      expect(r.stderr).to.match(/Nothing was planned or changed; .*--allow-weak-isolation/);
    }
    expect(await pe.docker.listContainers({ all: true })).to.deep.equal([]);
    expect(await sb.store().loadAll()).to.have.property('size', 0);
    // allowed: it goes on (the image is not on this engine: the attempt is Blocked, which is the planner's, not the check's)
    const allowed = await cli('reconcile', '--once', '--allow-weak-isolation');
    expect(allowed.stderr).to.match(/warning: the engine isolates attempts weakly \(--allow-weak-isolation\): /);
    expect(allowed.stderr).not.to.match(/would not isolate/);
    sb.store().invalidate();
    expect((await sb.status('a'))?.phase).to.equal('Blocked');
    expect((await cli('clean')).code).to.equal(0);
  });
});
