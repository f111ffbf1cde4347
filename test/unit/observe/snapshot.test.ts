/** observe/snapshot: grouping lists by attempt, and merging a batch's fresh lists into a kept snapshot. */
import { expect } from 'chai';
import { LABELS } from '../../../src/constants';
import { group, mergeSnapshot } from '../../../src/observe/snapshot';
import { container, network, snapshot } from '../../support/builders';

const I = 'inst';

describe('observe/snapshot', () => {
  it('groups by attempt; a container labeled only through its image, and not recorded, is foreign', () => {
    const ours = container(I, 'a', 'h1');
    const squatter = container(I, 'b', 'h2', { id: 'id-squat', imageId: 'sha256:labeled' });
    const recorded = container(I, 'c', 'h3', { id: 'id-c', imageId: 'sha256:labeled' });
    const images = new Map([['sha256:labeled', { [LABELS.managed]: 'true', [LABELS.instance]: I }]]);
    const s = group(I, [ours, squatter, recorded], [network(I, 'a', 'h1')], [], images, new Map([['id-c', { attempt: 'c', instance: I }]]), 5);
    expect([...s.attempts.keys()].sort()).to.deep.equal(['a', 'c']);
    expect(s.attempts.get('a')?.networks).to.have.length(1);
    expect(s.foreign.map((c) => c.id)).to.deep.equal(['id-squat']);
    expect(s.calls).to.equal(4);
  });

  it('decides by the ownership rule: a nonce of its own is ours without a record; an inherited one, or a record naming another attempt, is foreign', () => {
    const image = { [LABELS.managed]: 'true', [LABELS.instance]: I, [LABELS.attempt]: 'a', [LABELS.nonce]: 'n-image' };
    const stamped = container(I, 'a', 'h1', { id: 'id-stamped', imageId: 'sha256:committed' });
    stamped.labels[LABELS.nonce] = 'n-own';
    const inherited = container(I, 'a', 'h1', { id: 'id-inherited', imageId: 'sha256:committed', name: 'copy' });
    inherited.labels[LABELS.nonce] = 'n-image';
    const misrecorded = container(I, 'b', 'h2', { id: 'id-b' });
    const otherInstance = network('other', 'a', 'h1');
    const s = group(
      I,
      [stamped, inherited, misrecorded],
      [otherInstance],
      [],
      new Map([['sha256:committed', image]]),
      new Map([['id-b', { attempt: 'z', instance: I }]]),
      5,
    );
    expect([...s.attempts.keys()]).to.deep.equal(['a']);
    expect(s.attempts.get('a')?.containers.map((c) => c.id)).to.deep.equal(['id-stamped']);
    expect(s.attempts.get('a')?.networks).to.deep.equal([]);
    expect(s.foreign.map((c) => c.id).sort()).to.deep.equal(['id-b', 'id-inherited']);
  });

  describe('mergeSnapshot', () => {
    const kept = snapshot({
      containers: [container(I, 'a', 'h1'), container(I, 'b', 'h1', { state: 'running' }), container(I, 'c', 'h1')],
      networks: [network(I, 'b', 'h1')],
      foreign: [container(I, 'b', 'hx', { id: 'id-fb' }), container(I, 'z', 'hx', { id: 'id-fz' })],
    });

    it('replaces the refreshed attempts, drops the ones the engine no longer shows, keeps the others as they were', () => {
      const fresh = snapshot({ containers: [container(I, 'b', 'h1', { state: 'exited' }), container(I, 'new', 'h2')] });
      const m = mergeSnapshot(kept, { ...fresh, at: 9, calls: 10 }, new Set(['b', 'c', 'new']));
      expect([...m.attempts.keys()].sort()).to.deep.equal(['a', 'b', 'new']);
      expect(m.attempts.get('b')?.containers.map((c) => c.state)).to.deep.equal(['exited']);
      expect(m.attempts.get('b')?.networks, 'the refreshed attempt is taken whole').to.deep.equal([]);
      expect(m.attempts.get('a')).to.equal(kept.attempts.get('a'));
      expect(m.at).to.equal(9);
      expect(m.calls).to.equal(10);
    });

    it('foreign containers of refreshed attempts come from the fresh lists, the others stay', () => {
      const fresh = snapshot({ foreign: [container(I, 'c', 'hx', { id: 'id-fc' })] });
      const m = mergeSnapshot(kept, fresh, new Set(['b', 'c']));
      expect(m.foreign.map((c) => `${c.labels[LABELS.attempt]}:${c.id}`).sort()).to.deep.equal(['c:id-fc', 'z:id-fz']);
    });

    it('leaves the kept snapshot as it was', () => {
      mergeSnapshot(kept, snapshot({}), new Set(['a', 'b', 'c']));
      expect([...kept.attempts.keys()].sort()).to.deep.equal(['a', 'b', 'c']);
      expect(kept.foreign).to.have.length(2);
    });
  });
});
