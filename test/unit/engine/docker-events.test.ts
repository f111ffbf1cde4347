/** DockerEvents over a stand-in dockerode: the events a followed stream saw answer a later look without the engine's log. */
import { expect } from 'chai';
import type Dockerode from 'dockerode';
import { PassThrough } from 'node:stream';
import { DockerEvents } from '../../../src/engine/docker/events';
import type { BoundedCalls } from '../../../src/engine/docker/deadline';

/** An engine whose event log has forgotten everything (as dockerd's 256 events do under an OOM storm): a query answers only what `live` sends. */
function engine(): { docker: Dockerode; queries: unknown[]; live: PassThrough[] } {
  const queries: unknown[] = [];
  const live: PassThrough[] = [];
  const docker = {
    getEvents: (opts: unknown) => {
      queries.push(opts);
      const s = new PassThrough();
      live.push(s);
      return Promise.resolve(s);
    },
  } as unknown as Dockerode;
  return { docker, queries, live };
}
const calls = { run: (_op: string, start: (p: () => void) => Promise<unknown>) => start(() => undefined) } as unknown as BoundedCalls;
const line = (id: string, action: string, time: number) =>
  `${JSON.stringify({ Type: 'container', Action: action, Actor: { ID: id, Attributes: {} }, time, timeNano: time * 1e9 })}\n`;

describe('DockerEvents', () => {
  it("answers a look for an event a followed stream already saw (gone from the engine's log) without asking the engine", async () => {
    const e = engine();
    const events = new DockerEvents(e.docker, calls);
    const followed = await events.stream(['berth.dev/managed=true'], {});
    const it = followed[Symbol.asyncIterator]();
    e.live[0]?.write(line('c1', 'oom', 1_000));
    e.live[0]?.write(line('c1', 'die', 1_000));
    expect((await it.next()).value).to.include({ action: 'oom', id: 'c1' });
    expect((await it.next()).value).to.include({ action: 'die', id: 'c1' });
    const ev = await events.first('c1', ['oom'], { since: 999, until: 1_005 });
    expect(ev).to.include({ action: 'oom', id: 'c1' });
    expect(e.queries, 'only the followed stream asked').to.have.length(1);
  });

  it('asks the engine for one seen outside the window, or of another container, and ends the look when the engine ends it', async () => {
    const e = engine();
    const events = new DockerEvents(e.docker, calls);
    const followed = await events.stream([], {});
    const it = followed[Symbol.asyncIterator]();
    e.live[0]?.write(line('c1', 'oom', 1_000));
    await it.next();
    for (const [id, since, until] of [
      ['c1', 1_001, 1_010],
      ['c1', 990, 999],
      ['c2', 999, 1_005],
    ] as const) {
      const look = events.first(id, ['oom'], { since, until });
      await new Promise((r) => setImmediate(r));
      e.live.at(-1)?.end();
      expect(await look, `${id} ${since}..${until}`).to.equal(undefined);
    }
    expect(e.queries).to.have.length(4);
  });
});
