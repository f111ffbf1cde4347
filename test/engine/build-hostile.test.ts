/**
 * Hostile builds on the real engine (issue 50, "Hostile input"; the contexts refused at load are
 * test/unit/spec/build-context.test.ts's): a Dockerfile COPY of a path outside the context, a build
 * that never ends (--build-timeout) and a build that writes without end (its resources.disk).
 * Each is Blocked/BuildFailed with a clear message, the others' builds go on, and nothing of
 * theirs stays on the engine. FROM berth/busybox:local: nothing is downloaded; the writer writes
 * 8 MiB every 0.2 s, so even the build deadline bounds it to a few hundred MiB.
 */
import { expect } from 'chai';
import { REASONS } from '../../src/constants';
import { docker, removeBuilt, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const attempt = (name: string, extra = '') =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${name}}\nspec:\n  build: {context: ./${name}}\n  command: ['true']\n${extra}`;

describe('hostile builds (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox | undefined;
  afterEach(async function () {
    if (!sb) return;
    await sb.destroy();
    await removeBuilt(sb);
    sb = undefined;
  });

  it('a COPY from outside the context, a build past --build-timeout, a build past its resources.disk: each BuildFailed, saying which', async function () {
    sb = await Sandbox.create('build-hostile');
    await sb.write('secret', 'not for the build');
    await sb.write('outside/Dockerfile', 'FROM berth/busybox:local\nCOPY ../secret /secret\n');
    // the instance in each step's command: its step containers are found by it, not another test's
    await sb.write('forever/Dockerfile', `FROM berth/busybox:local\nRUN sleep 600 || echo ${sb.instance}\n`);
    await sb.write(
      'writer/Dockerfile',
      `FROM berth/busybox:local\nRUN i=0; while true; do dd if=/dev/zero of=/f$i bs=1M count=8 2>/dev/null; i=$((i+1)); sleep 0.2; done; echo ${sb.instance}\n`,
    );
    await sb.write('fine/Dockerfile', 'FROM berth/busybox:local\nRUN echo fine > /fine\n');
    for (const n of ['outside', 'forever', 'fine']) await sb.write(`${n}.yaml`, attempt(n));
    await sb.write('writer.yaml', attempt('writer', '  resources: {disk: 32Mi}\n'));
    const danglingBefore = (await docker.listImages({ filters: JSON.stringify({ dangling: ['true'] }) })).length;
    const r = await sb.cli('reconcile', '--once', '--wait', '--max-builds', '4', '--build-timeout', '10s');
    expect(r.code, r.stderr).to.equal(5);
    const st = async (n: string) => {
      const s = await sb?.status(n);
      return { phase: s?.phase, reason: s?.reason, message: s?.message ?? '' };
    };
    expect(await st('fine')).to.deep.include({ phase: 'Succeeded' });
    const outside = await st('outside');
    expect(outside, outside.message).to.deep.include({ phase: 'Blocked', reason: REASONS.buildFailed });
    expect(outside.message).to.match(/outside the build context|Forbidden path/i);
    const forever = await st('forever');
    expect(forever).to.deep.include({ phase: 'Blocked', reason: REASONS.buildFailed });
    expect(forever.message).to.contain('--build-timeout (10 s)').and.to.contain(`Dockerfile line 2 (RUN sleep 600 || echo ${sb.instance})`);
    const writer = await st('writer');
    expect(writer).to.deep.include({ phase: 'Blocked', reason: REASONS.buildFailed });
    expect(writer.message).to.match(/more than its disk limit 32 MiB/);
    // nothing of the failed builds stays (their steps' images, their containers)
    expect((await docker.listImages({ filters: JSON.stringify({ dangling: ['true'] }) })).length).to.be.at.most(danglingBefore);
    // a stopped build's step container is removed by the engine once the build's request is closed: waited for
    const instance = sb.instance;
    const gone = await waitFor(
      "the stopped builds' step containers to go",
      async () => (await docker.listContainers({ all: true })).every((c) => !c.Command.includes(instance)),
      { timeoutMs: 30_000 },
    );
    expect(gone).to.equal(true);
  });
});
