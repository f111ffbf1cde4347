/** Image GC's decision (plan/image-gc.ts): only images berth brought, none needed, none young, least recently used first, until the low mark. */
import { expect } from 'chai';
import { planImageGc, type Brought, type ImageGcInput } from '../../../src/plan/image-gc';

const GiB = 1024 ** 3;
const id = (c: string) => `sha256:${c.repeat(64)}`;
const NOW = 10_000_000;
const MIN = 60_000;

/** A 100 GiB data root with `usedGiB` used; images a..e of 2 GiB each; berth brought a, b, c, d (e is someone else's). */
function gcInput(usedGiB: number, over: Partial<ImageGcInput> = {}): ImageGcInput {
  const brought: Brought[] = [
    { id: id('a'), ref: 'berth-build/aaaa', how: 'built', at: NOW - 50 * MIN },
    { id: id('b'), ref: 'berth-build/bbbb', how: 'built', at: NOW - 40 * MIN },
    { id: id('c'), ref: 'reg.example/c:1', how: 'pulled', at: NOW - 30 * MIN },
    { id: id('d'), ref: 'berth-build/dddd', how: 'built', at: NOW - 1 * MIN },
  ];
  return {
    config: { highPercent: 85, lowPercent: 80, minAgeMs: 2 * MIN },
    reading: { what: 'engine-data-root', path: '/var/lib/docker', totalBytes: 100 * GiB, freeBytes: (100 - usedGiB) * GiB },
    images: [
      { id: id('a'), tags: ['berth-build/aaaa:latest'], size: 2 * GiB },
      { id: id('b'), tags: ['berth-build/bbbb'], size: 2 * GiB },
      { id: id('c'), tags: ['reg.example/c:1'], size: 2 * GiB },
      { id: id('d'), tags: ['berth-build/dddd'], size: 2 * GiB },
      { id: id('e'), tags: ['someone/else:1'], size: 2 * GiB },
    ],
    brought,
    needed: new Set(),
    own: new Set(['berth/egress-proxy:local']),
    lastUsed: new Map(),
    now: NOW,
    ...over,
  };
}
const refs = (i: ImageGcInput) => planImageGc(i).removals.map((r) => r.ref);

describe('plan/image-gc', () => {
  it('below or at the high mark: nothing; the reason says how full', () => {
    const d = planImageGc(gcInput(85));
    expect(d.removals).to.deep.equal([]);
    expect(d.why).to.contain('85% full, not above --image-gc-high 85%');
  });

  it('above the high mark: least recently used first, until the sizes removed reach the low mark', () => {
    // 87 GiB used, 7 GiB to free: a, b, c (6 GiB) are all there is (d too young, e not berth's)
    expect(refs(gcInput(87))).to.deep.equal(['berth-build/aaaa', 'berth-build/bbbb', 'reg.example/c:1']);
    // 84 GiB used over a high mark of 83: 4 GiB to free, the two least recently used
    expect(refs(gcInput(84, { config: { highPercent: 83, lowPercent: 80, minAgeMs: 2 * MIN } }))).to.deep.equal(['berth-build/aaaa', 'berth-build/bbbb']);
    // a run used a a minute ago: too young now
    expect(refs(gcInput(86, { lastUsed: new Map([[id('a'), NOW - MIN]]) }))).to.deep.equal(['berth-build/bbbb', 'reg.example/c:1']);
    // b used by a run 20 minutes ago: after c (brought 30 minutes ago)
    expect(refs(gcInput(87, { lastUsed: new Map([[id('b'), NOW - 20 * MIN]]) }))).to.deep.equal(['berth-build/aaaa', 'reg.example/c:1', 'berth-build/bbbb']);
    // 82 GiB over 81: 2 GiB, one image
    const d = planImageGc(gcInput(82, { config: { highPercent: 81, lowPercent: 80, minAgeMs: 2 * MIN } }));
    expect(d.removals.map((r) => r.ref)).to.deep.equal(['berth-build/aaaa']);
    expect(d.why).to.contain('above --image-gc-high 81%');
  });

  it('never an image berth did not bring, one needed, one berth runs itself, one younger than the min age, one retagged', () => {
    const i = gcInput(99, { config: { highPercent: 85, lowPercent: 0, minAgeMs: 2 * MIN } });
    expect(refs(i)).to.deep.equal(['berth-build/aaaa', 'berth-build/bbbb', 'reg.example/c:1']); // d too young, e not berth's
    expect(refs({ ...i, needed: new Set([id('b')]) })).to.deep.equal(['berth-build/aaaa', 'reg.example/c:1']);
    expect(refs({ ...i, own: new Set(['berth-build/aaaa']) })).to.deep.equal(['berth-build/bbbb', 'reg.example/c:1']);
    // berth's reference now names another image: not berth's image any more
    const moved = { ...i, images: i.images.map((m) => (m.id === id('c') ? { ...m, tags: [] } : m)) };
    expect(refs(moved)).to.deep.equal(['berth-build/aaaa', 'berth-build/bbbb']);
    expect(refs({ ...i, config: { ...i.config, minAgeMs: 0 } })).to.deep.equal(['berth-build/aaaa', 'berth-build/bbbb', 'reg.example/c:1', 'berth-build/dddd']);
  });

  it('a data root that cannot be read decides nothing', () => {
    expect(refs(gcInput(99, { reading: { what: 'engine-data-root', path: '/x', skipped: 'the engine is remote' } }))).to.deep.equal([]);
    expect(refs(gcInput(99, { reading: undefined }))).to.deep.equal([]);
  });
});
