/**
 * Attempts' volumes on a swarm (src/backend/swarm/volumes.ts), over in-memory volume stores for
 * the manager's engine and each node's: where a volume is made and recorded, what is listed, and
 * what its removal does when its node is ready, down, or gone from the swarm. The real two-node
 * swarm runs the same in test/engine/swarm/volumes.test.ts.
 */
import { expect } from 'chai';
import { COMPONENTS, LABELS, SWARM } from '../../../src/constants';
import type { NodeHandle, NodePool } from '../../../src/backend/swarm/nodes';
import { SwarmVolumes } from '../../../src/backend/swarm/volumes';
import type { NodeSummary } from '../../../src/engine/swarm/types';
import type { Engine, Labels, VolumeClient, VolumeSummary } from '../../../src/engine/types';

/** A volume store as an engine keeps one: a create of a name that exists answers that volume. */
class Store implements VolumeClient {
  readonly vols = new Map<string, Labels>();
  /** Removals refused as "in use" (409) before one succeeds. */
  busy = 0;
  list = async (f: string[]): Promise<VolumeSummary[]> =>
    [...this.vols]
      .filter(([, l]) => f.every((x) => (x.includes('=') ? l[x.split('=')[0]!] === x.slice(x.indexOf('=') + 1) : l[x] !== undefined)))
      .map(([name, labels]) => ({ name, labels, driver: 'local' }));
  inspect = async (name: string): Promise<VolumeSummary> => {
    const labels = this.vols.get(name);
    if (!labels) throw Object.assign(new Error(`no such volume: ${name}`), { statusCode: 404 });
    return { name, labels, driver: 'local' };
  };
  create = async (spec: { name: string; labels: Labels }): Promise<string> => {
    if (!this.vols.has(spec.name)) this.vols.set(spec.name, { ...spec.labels });
    return spec.name;
  };
  remove = async (name: string): Promise<boolean> => {
    if (this.busy > 0) {
      this.busy--;
      throw Object.assign(new Error('volume is in use'), { statusCode: 409 });
    }
    return this.vols.delete(name);
  };
}

function node(id: string, state = 'ready'): NodeSummary {
  return { id, hostname: `host-${id}`, role: 'worker', availability: 'active', state, addr: '', labels: { [SWARM.engineLabel]: `unix:///${id}.sock` } };
}

function setup() {
  const manager = new Store();
  const stores = new Map([
    ['n1', new Store()],
    ['n2', new Store()],
  ]);
  let nodes = [node('n1'), node('n2')];
  const handle = (n: NodeSummary): NodeHandle => ({ node: n, engine: { volumes: stores.get(n.id) } as unknown as Engine, docker: undefined as never });
  const pool = { all: async () => nodes, handle } as unknown as NodePool;
  const placed: Labels[] = [];
  const vols = new SwarmVolumes(manager, pool, async (labels) => {
    placed.push(labels);
    return handle(nodes.find((n) => n.id === 'n2')!);
  });
  return { manager, stores, vols, placed, setNodes: (n: NodeSummary[]) => (nodes = n) };
}

const LABELS_OF = { [LABELS.managed]: 'true', [LABELS.instance]: 'i', [LABELS.attempt]: 'a', [LABELS.component]: COMPONENTS.volume, [LABELS.volume]: 'data' };

describe("swarm backend: attempts' volumes", () => {
  it('makes a volume on the node placement gives, after its record on the manager; lists and inspects it with the labels asked for', async () => {
    const { manager, stores, vols, placed } = setup();
    expect(await vols.create({ name: 'v', labels: LABELS_OF })).to.equal('v');
    expect(placed).to.deep.equal([LABELS_OF]);
    const withNode = { ...LABELS_OF, [SWARM.volumeNodeLabel]: 'n2' };
    expect(Object.fromEntries(manager.vols)).to.deep.equal({ v: withNode });
    expect(Object.fromEntries(stores.get('n2')!.vols)).to.deep.equal({ v: withNode });
    expect(stores.get('n1')!.vols.size).to.equal(0);
    expect((await vols.inspect('v')).labels).to.deep.equal(LABELS_OF);
    expect((await vols.list([`${LABELS.instance}=i`])).map((v) => [v.name, v.labels])).to.deep.equal([['v', LABELS_OF]]);
    // a name that exists is answered with that volume: no new placement
    await vols.create({ name: 'v', labels: LABELS_OF });
    expect(placed).to.have.length(1);
  });

  it("keeps berth's other volumes (its engine lock) on the manager and out of placement; a run's own helpers are not listed", async () => {
    const { manager, vols, placed } = setup();
    await vols.create({ name: 'berth.lock.i', labels: { 'dev.berth.lock': 'i' } });
    manager.vols.set('run-ws', { [LABELS.instance]: 'i', [SWARM.runLabel]: 'run' });
    expect(placed).to.deep.equal([]);
    expect((await vols.list([])).map((v) => v.name)).to.deep.equal(['berth.lock.i']);
  });

  it('removes a volume on its node, waiting while it is in use, then its record', async () => {
    const { manager, stores, vols } = setup();
    await vols.create({ name: 'v', labels: LABELS_OF });
    stores.get('n2')!.busy = 3;
    expect(await vols.remove('v')).to.equal(true);
    expect([manager.vols.size, stores.get('n2')!.vols.size]).to.deep.equal([0, 0]);
  });

  it('refuses the removal while its node is down, naming it, and keeps the record (GC and clean try again once it is back)', async () => {
    const { manager, stores, vols, setNodes } = setup();
    await vols.create({ name: 'v', labels: LABELS_OF });
    setNodes([node('n1'), node('n2', 'down')]);
    let err: Error | undefined;
    await vols.remove('v').catch((e: Error) => (err = e));
    expect(err?.message).to.equal('volume v is on swarm node host-n2 (n2), which is down: it is removed once that node is back');
    expect([manager.vols.size, stores.get('n2')!.vols.size]).to.deep.equal([1, 1]);
    expect((await vols.list([])).map((v) => v.name)).to.deep.equal(['v']);
  });

  it('drops only the record of a volume whose node has left the swarm (its data went with the node)', async () => {
    const { manager, vols, setNodes } = setup();
    await vols.create({ name: 'v', labels: LABELS_OF });
    setNodes([node('n1')]);
    expect(await vols.remove('v')).to.equal(true);
    expect(manager.vols.size).to.equal(0);
  });
});
