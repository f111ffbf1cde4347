/**
 * The resync never depends on the event stream, and an engine call that gets no answer holds
 * nothing for longer than its deadline. The controller talks to the real engine through a
 * proxy socket (test/support/sick-engine.ts) whose event stream never answers, and which for a
 * moment answers nothing at all: the requests of that moment stay unanswered for good (as a
 * request to an engine that was killed and restarts can). Before every engine call had a
 * deadline, the batch waiting on such a request held the work loop, and with it every later
 * resync, forever: no new spec was picked up ("stopped doing anything after 'engine event
 * stream ended; reconnecting in 4000 ms'").
 */
import { expect } from 'chai';
import Dockerode from 'dockerode';
import path from 'node:path';
import { Writable } from 'node:stream';
import { LABELS } from '../../src/constants';
import { createDockerEngine } from '../../src/engine/docker';
import { createLogger } from '../../src/util/log';
import { startController } from '../support/controller';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { SickEngine } from '../support/sick-engine';
import { waitFor } from '../support/wait';

describe('resync while the event stream is down and the engine stops answering for a moment', function () {
  this.timeout(90_000);
  before(requireEngine);

  let sb: Sandbox;
  let proxy: SickEngine;
  before(async function () {
    sb = await Sandbox.create('rsy');
    proxy = await SickEngine.start({ proxyTo: '/var/run/docker.sock' });
  });
  after(async function () {
    await proxy.close();
    await sb.destroy();
  });

  it('picks up a new spec and notices a container killed behind its back, by its resyncs', async function () {
    proxy.hangEvents = true; // the event stream never connects: only the resync and the folder wake the controller
    const engine = createDockerEngine(new Dockerode({ socketPath: proxy.socket }), { timeoutMs: 2000 });
    let logText = '';
    const log = createLogger({ level: 'info', format: 'text', stream: new Writable({ write: (c, _e, cb) => ((logText += String(c)), cb()) }) });
    const ctl = startController(sb, { resync: 2 }, engine, log);
    const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
    const phase = (n: string, p: string) => async () => ((await sb.status(n))?.phase === p ? true : undefined);
    try {
      await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
      await waitFor('a Running', phase('a', 'Running'), { dirs: [attempts] });

      // The engine answers nothing for a moment; what is asked then is never answered.
      const before = proxy.unansweredPaths.length;
      proxy.hangAll = true;
      await sb.write('b.yaml', sb.attempt('b', 'sleep 300'));
      await waitFor('a call other than the event stream left unanswered', async () => proxy.unansweredPaths.slice(before).some((p) => !p.endsWith('/events')), {
        timeoutMs: 10_000,
      });
      proxy.hangAll = false;

      // A work loop held by the unanswered request would never get here: nothing else starts b.
      await waitFor('b Running once the engine answers again', phase('b', 'Running'), { dirs: [attempts], timeoutMs: 30_000 });

      // With no event stream, only the resync sees a container killed behind berth's back.
      const [a] = await docker.listContainers({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=a`] }) });
      await docker.getContainer(a!.Id).kill();
      await waitFor('a Failed, seen by a resync', phase('a', 'Failed'), { dirs: [attempts], timeoutMs: 30_000 });
      expect(proxy.unansweredPaths.filter((p) => p.endsWith('/events')).length, 'the event stream was down throughout').to.be.greaterThan(0);
      expect(logText).to.match(/engine reachable again after \d+ s/);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });
});
