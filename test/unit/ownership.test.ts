/** ownership: the one rule for containers, networks and volumes (pure). */
import { expect } from 'chai';
import { LABELS } from '../../src/constants';
import type { ContainerCreateSpec, Labels } from '../../src/engine/types';
import { containerOwnership, imageLabels, labelOwnership, recordedContainers, stampNonce, type OwnershipContext } from '../../src/ownership';
import { status } from '../support/builders';

const I = 'inst';
const berth = (attempt: string, extra: Labels = {}): Labels => ({ [LABELS.managed]: 'true', [LABELS.instance]: I, [LABELS.attempt]: attempt, ...extra });
const PLAIN = 'sha256:plain';
const LABELED = 'sha256:labeled'; // berth labels, no nonce (made by hand, or by an older berth's commit)
const COMMITTED = 'sha256:committed'; // committed from a berth container: its nonce too

function ctx(recorded: [string, string, string?][] = []): OwnershipContext {
  return {
    instance: I,
    labeledImages: imageLabels([
      { id: LABELED, tags: [], labels: berth('a') },
      { id: COMMITTED, tags: [], labels: berth('a', { [LABELS.nonce]: 'n-image' }) },
    ]),
    recorded: new Map(recorded.map(([id, attempt, instance]) => [id, { attempt, instance: instance ?? I }])),
  };
}

const verdict = (labels: Labels, imageId: string, c = ctx(), id = 'id-1') => {
  const o = containerOwnership({ id, labels, imageId }, c);
  return o.owned ? `ours:${o.attempt}` : `not:${o.why}`;
};

describe('ownership', () => {
  it('networks and volumes: the labels are the whole rule', () => {
    expect(labelOwnership(berth('a'), I)).to.deep.equal({ owned: true, attempt: 'a' });
    expect(labelOwnership({ ...berth('a'), [LABELS.managed]: 'false' }, I).owned).to.equal(false);
    expect(labelOwnership(berth('a'), 'other')).to.deep.equal({ owned: false, why: 'its labels name another instance than other' });
    expect(labelOwnership({ [LABELS.managed]: 'true', [LABELS.instance]: I }, I)).to.deep.equal({ owned: false, why: 'its labels name no attempt' });
    expect(labelOwnership({}, I)).to.deep.equal({ owned: false, why: 'it carries no berth labels' });
  });

  const table: [string, Labels, string, [string, string, string?][], string][] = [
    ['from an image without berth labels, no record needed', berth('a', { [LABELS.nonce]: 'n1' }), PLAIN, [], 'ours:a'],
    ['from an image without berth labels, made by an older berth (no nonce)', berth('a'), PLAIN, [], 'ours:a'],
    ['its own nonce, image labeled without one: labeled at create', berth('a', { [LABELS.nonce]: 'n1' }), LABELED, [], 'ours:a'],
    ['its own nonce, image committed from a berth container', berth('b', { [LABELS.nonce]: 'n1' }), COMMITTED, [], 'ours:b'],
    [
      "nonce equal to its image's: inherited, whatever the records say",
      berth('a', { [LABELS.nonce]: 'n-image' }),
      COMMITTED,
      [['id-1', 'a']],
      'not:its berth labels come from its image',
    ],
    ['no nonce, labeled image, no record: inherited', berth('a'), LABELED, [], 'not:its berth labels come from its image'],
    ['no nonce, labeled image, recorded for its attempt: an older berth made it', berth('a'), LABELED, [['id-1', 'a']], 'ours:a'],
    [
      'a record names it for another attempt',
      berth('a', { [LABELS.nonce]: 'n1' }),
      PLAIN,
      [['id-1', 'b']],
      'not:the status records name it for attempt b of instance inst',
    ],
    ['a record names it for another instance', berth('a'), PLAIN, [['id-1', 'a', 'other']], 'not:the status records name it for attempt a of instance other'],
    ["another instance's labels", { ...berth('a'), [LABELS.instance]: 'other' }, PLAIN, [], 'not:its labels name another instance than inst'],
    ['no berth labels', {}, PLAIN, [], 'not:it carries no berth labels'],
  ];
  for (const [what, labels, image, recorded, want] of table) {
    it(`containers: ${what}`, () => {
      expect(verdict(labels, image, ctx(recorded))).to.equal(want);
    });
  }

  it('records: every containerId, with its attempt and instance', () => {
    const m = recordedContainers([
      status('a', { containerId: 'x' }),
      status('b', { containerId: undefined as never }),
      status('c', { containerId: 'y', instance: 'j' }),
    ]);
    expect([...m.entries()]).to.deep.equal([
      ['x', { attempt: 'a', instance: 'default' }],
      ['y', { attempt: 'c', instance: 'j' }],
    ]);
  });

  it('stamps a fresh nonce on every create, leaving the spec it was given alone', () => {
    const spec = { name: 'n', labels: berth('a') } as unknown as ContainerCreateSpec;
    const one = stampNonce(spec);
    const two = stampNonce(spec);
    expect(one.labels[LABELS.nonce]).to.match(/^[0-9a-f]{24}$/);
    expect(one.labels[LABELS.nonce]).not.to.equal(two.labels[LABELS.nonce]);
    expect(spec.labels[LABELS.nonce]).to.equal(undefined);
    expect(one.labels[LABELS.attempt]).to.equal('a');
  });
});
