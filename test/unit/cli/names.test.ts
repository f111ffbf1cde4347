/** The names every command takes (CONTRACT v3 "Names"): NAME, attempt/NAME, set/NAME. */
import { expect } from 'chai';
import { expandRefs, parseRefs, setNames, type Known, type Ref } from '../../../src/cli/names';

const known: Known = {
  attempts: new Set(['solo', 'grid-c', 'grid-a', 'grid-b', 'other']),
  sets: new Map([
    ['grid', ['grid-c', 'grid-a', 'grid-b']],
    ['broken', []],
  ]),
  instance: 'default',
};

function refs(args: string[]): Ref[] {
  const r = parseRefs(args);
  if (!Array.isArray(r)) throw new Error(r.usage);
  return r;
}

describe('names: NAME, attempt/NAME, set/NAME', () => {
  it('reads what get -o name prints, bare names, and the kinds in any case or number', () => {
    expect(refs(['attempt/solo', 'solo', 'set/grid', 'Sets/grid', 'attemptset/grid', 'ATTEMPTS/x']).map((r) => [r.kind, r.name, r.explicit])).to.deep.equal([
      ['attempt', 'solo', true],
      ['attempt', 'solo', false],
      ['set', 'grid', true],
      ['set', 'grid', true],
      ['set', 'grid', true],
      ['attempt', 'x', true],
    ]);
  });

  it('refuses a kind berth does not know, a missing name and an empty argument, saying what it takes', () => {
    for (const [arg, says] of [
      ['pod/x', /^"pod\/x": berth has no kind "pod": give an attempt name, attempt\/NAME, or set\/NAME/],
      ['set/', /^"set\/": no name after set\//],
      ['attempt/a/b', /no name after attempt\//],
      ['', /^an empty name/],
    ] as const) {
      const r = parseRefs(['solo', arg]);
      expect(r, arg).to.have.property('usage').that.matches(says);
    }
  });

  it('a set stands for its children in expansion order; each name once, in the order given', () => {
    expect(expandRefs(refs(['attempt/grid-b', 'set/grid', 'solo', 'grid-a']), known)).to.deep.equal({
      names: ['grid-b', 'grid-c', 'grid-a', 'solo'],
      missing: [],
    });
  });

  it('a name that stands for nothing says what exists: a near name, the set of that name, or the names there are', () => {
    const r = expandRefs(refs(['sol', 'attempt/grid', 'nothing-like-it', 'set/gird', 'set/zzzzzz', 'set/broken', 'other']), known);
    expect(r.names).to.deep.equal(['other']);
    expect(r.missing).to.deep.equal([
      'attempt "sol" not found (did you mean "solo"?)',
      'attempt "grid" not found: set/grid names the 3 attempts of AttemptSet grid',
      'attempt "nothing-like-it" not found: instance "default" has 5 attempts: grid-a, grid-b, grid-c, other, solo',
      'AttemptSet "gird" not found (did you mean set/grid?)',
      'AttemptSet "zzzzzz" not found: the AttemptSets are broken, grid',
      'AttemptSet "broken" has no attempts: its matrix could not be expanded (berth validate says why)',
    ]);
  });

  it('many attempts are counted, not listed; none is said with where to look', () => {
    const many: Known = { attempts: new Set(Array.from({ length: 40 }, (_, i) => `a-${i}`)), sets: new Map(), instance: 'ci' };
    expect(expandRefs(refs(['zzzzzzzz']), many).missing).to.deep.equal(['attempt "zzzzzzzz" not found: instance "ci" has 40 attempts (berth get lists them)']);
    const none: Known = { attempts: new Set(), sets: new Map(), instance: 'ci' };
    expect(expandRefs(refs(['x', 'set/y']), none).missing).to.deep.equal([
      'attempt "x" not found: instance "ci" has no attempts (check --specs, --state and --instance)',
      'AttemptSet "y" not found: the specs declare no AttemptSet (check --specs)',
    ]);
  });

  it('commands that take sets read NAME and set/NAME, and refuse an attempt', () => {
    expect(setNames(['grid', 'set/grid', 'attemptset/other'])).to.deep.equal(['grid', 'grid', 'other']);
    expect(setNames(['attempt/solo'])).to.deep.equal({ usage: '"attempt/solo" is an attempt: this command takes AttemptSets (a name, or set/NAME)' });
    expect(setNames(['pod/x'])).to.have.property('usage');
  });
});
