/**
 * A run's end on a node that is not the manager wakes berth (tasks emit no events, moby#37403;
 * the manager's engine reports only its own containers): the swarm backend's event stream
 * merges each node's engine events. With the manager drained, every run lands on the worker.
 */
import { expect } from 'chai';
import { createSwarmBackend } from '../../../src/backend/swarm';
import { containerName, LABELS, SWARM } from '../../../src/constants';
import { RELIST_EVENT, type EngineEvent } from '../../../src/engine/types';
import { instanceFilters } from '../../../src/observe/snapshot';
import { startController } from '../../support/controller';
import { Sandbox } from '../../support/sandbox';
import { swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { thenTearDown } from '../../support/teardown';
import { waitFor } from '../../support/wait';

describe('wake-ups for runs on every node of a real two-node swarm', function () {
  this.timeout(180_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
    await s.availability(s.manager, 'drain');
  });
  after(async () => {
    await s.availability(s.manager, 'active');
  });

  it("a controller with --resync 300 s records a worker run's end long before a resync", async () => {
    const sb = await Sandbox.create('sw-wake');
    const ctl = startController(sb, { resync: 300 }, createSwarmBackend({ docker: s.manager.docker }));
    await thenTearDown(
      async () => {
        await sb.write('a.yaml', sb.attempt('a', 'sleep 3; echo done > /results/out.txt'));
        const dir = sb.store().dir;
        // the wait (60 s) ends long before the first resync (300 s): a record within it came from an event
        const st = await waitFor(
          'a Succeeded',
          async () => {
            const rec = await sb.status('a');
            return rec?.phase === 'Succeeded' ? rec : undefined;
          },
          { dirs: [dir], timeoutMs: 60_000 },
        );
        expect(Number.isFinite(Date.parse(st.finishedAt ?? '')), JSON.stringify(st)).to.equal(true);
        // it ran on the worker (the manager is drained)
        expect(st.containerId ?? '').to.match(new RegExp(`@${s.workers[0]!.id}$`));
      },
      async () => {
        const stopped = await ctl.stop();
        const c = await swarmCli(sb, s, 'clean');
        await sb.dispose();
        expect(stopped, 'the controller stopped').to.equal(0);
        expect(c.code, c.stderr).to.equal(0);
      },
    );
  });

  it("carries the worker's task end with the run's id, and a relist once a node's engine is back", async () => {
    const sb = await Sandbox.create('sw-evs');
    const backend = createSwarmBackend({ docker: s.manager.docker });
    const abort = new AbortController();
    const got: EngineEvent[] = [];
    let wake: () => void = () => undefined;
    const until = async (what: string, f: (e: EngineEvent) => boolean) => {
      const end = Date.now() + 60_000;
      while (!got.some(f)) {
        if (Date.now() > end) throw new Error(`no ${what} among ${JSON.stringify(got.map((e) => [e.type, e.action, e.id]))}`);
        await new Promise<void>((r) => ((wake = r), setTimeout(r, 1_000)));
      }
      return got.find(f) as EngineEvent;
    };
    const stream = await backend.events.stream(instanceFilters(sb.instance), { signal: abort.signal });
    const reading = (async () => {
      try {
        for await (const e of stream) {
          got.push(e);
          wake();
        }
      } catch {
        // aborted below
      }
    })();
    const worker = s.workers[0]!;
    await thenTearDown(
      async () => {
        await sb.write('a.yaml', sb.attempt('a', 'exit 0'));
        const r = await swarmCli(sb, s, 'reconcile', '--once');
        expect(r.code, r.stderr).to.equal(0);
        const die = await until('die', (e) => e.type === 'container' && e.action === 'die');
        expect(die.id).to.equal(`${containerName(sb.instance, 'a')}@${worker.id}`);
        expect(die.origin).to.equal(worker.id);
        expect(die.attributes[LABELS.attempt]).to.equal('a');
        expect(die.attributes[SWARM.taskLabel]).to.equal(containerName(sb.instance, 'a'));
        // the worker's engine is killed and comes back: a relist says what happened meanwhile was not seen
        await worker.kill();
        got.length = 0;
        const killed = BigInt(Date.now()) * 1_000_000n;
        // started again once the manager has it down, and waited for until it is ready (test/support/swarm.ts)
        await s.startAgain(worker);
        const re = await until('relist', (e) => e.type === RELIST_EVENT);
        expect(re.origin).to.equal(worker.id);
        expect(re.timeNano > killed).to.equal(true);
      },
      async () => {
        abort.abort();
        await reading;
        // whatever the body did, the worker is back and ready before the clean and the next test file (when it runs: only waited for)
        const back = await s.startAgain(worker).then(
          () => undefined,
          (err: unknown) => err,
        );
        const c = await swarmCli(sb, s, 'clean');
        await sb.dispose();
        if (back) throw back;
        expect(c.code, c.stderr).to.equal(0);
      },
    );
  });
});
