/** The store's records by container id, kept across writes, read as recordedContainers reads the records (issue 55). */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { recordedContainers, recordIndex } from '../../../src/ownership';
import { ContainerIndex } from '../../../src/status/container-index';
import { StatusStore } from '../../../src/status/store';
import type { AttemptStatus } from '../../../src/status/types';
import { status } from '../../support/builders';

const I = 'inst';
const view = (m: ReturnType<typeof recordedContainers>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1));

describe('status/container-index', () => {
  it('after any sequence of writes and removals, equals the index made from the records (two records naming one id included)', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 40; round++) {
      const records = new Map<string, AttemptStatus>();
      const idx = new ContainerIndex();
      for (let step = 0; step < 60; step++) {
        const name = `a${rnd(8)}`;
        const before = records.get(name);
        if (rnd(5) === 0) {
          idx.wrote(records, before, undefined);
          records.delete(name);
        } else {
          const id = rnd(4) === 0 ? undefined : `c${rnd(10)}`;
          const next = status(name, { instance: I, ...(id ? { containerId: id } : {}) });
          idx.wrote(records, before, next);
          records.set(name, next);
        }
        if (rnd(3) === 0) expect(view(recordIndex(idx.over(records))), `round ${round} step ${step}`).to.deep.equal(view(recordedContainers(records.values())));
      }
      expect(view(recordIndex(idx.over(records)))).to.deep.equal(view(recordedContainers(records.values())));
    }
  });

  it("a store's index follows its puts and removals", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-cindex-'));
    try {
      const store = new StatusStore(dir, I);
      await store.put(status('a', { instance: I, containerId: 'x1' }));
      await store.put(status('b', { instance: I, containerId: 'x2' }));
      expect([...(await store.byContainer()).keys()].sort()).to.deep.equal(['x1', 'x2']);
      await store.put(status('a', { instance: I, containerId: 'x3' }));
      await store.remove('b');
      const m = await store.byContainer();
      expect([...m.keys()]).to.deep.equal(['x3']);
      expect(m.get('x3')?.name).to.equal('a');
      // a fresh store reading the folder agrees
      expect(view(recordIndex(await new StatusStore(dir, I).byContainer()))).to.deep.equal(view(recordIndex(m)));
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
