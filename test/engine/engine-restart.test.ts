/**
 * The engine restarts under a running controller: it reconnects its event stream, relists,
 * and converges; nothing is lost. Uses a private dockerd the test starts and stops itself.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { createDockerEngine } from '../../src/engine/docker';
import { startController } from '../support/controller';
import { requireEngine } from '../support/engine';
import { PrivateEngine } from '../support/private-engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

describe('engine restart under a running controller (private engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  const pe = new PrivateEngine('rst');
  let sb: Sandbox;
  before(async function () {
    await pe.start();
    await pe.importImage();
    sb = await Sandbox.create('rst');
  });
  after(async function () {
    // the private engine goes as a whole: its containers, networks and volumes with it
    await pe.destroy();
    await fs.rm(sb.dir, { recursive: true, force: true });
  });

  it('reconnects after the engine restarts and converges: the lost run is recorded, new specs run', async function () {
    const engine = createDockerEngine(pe.docker);
    const ctl = startController(sb, { resync: 600 }, engine);
    const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
    const phase = (n: string, p: string) => async () => ((await sb.status(n))?.phase === p ? true : undefined);
    const list = async (n: string) => pe.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=${n}`] }) });
    try {
      await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
      await waitFor('a Running', phase('a', 'Running'), { dirs: [attempts] });

      await pe.stop(); // the engine goes away: its containers stop with it
      await sb.write('b.yaml', sb.attempt('b', 'sleep 300')); // a spec dropped while the engine is down
      await pe.start();

      await waitFor('a Failed after the restart', phase('a', 'Failed'), { dirs: [attempts], timeoutMs: 30_000 });
      await waitFor('b Running after the restart', phase('b', 'Running'), { dirs: [attempts], timeoutMs: 30_000 });
      expect((await list('b'))[0]?.State).to.equal('running');
      const a = await sb.status('a');
      expect(a?.reason).to.be.oneOf(['Error', 'Lost']);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });
});
