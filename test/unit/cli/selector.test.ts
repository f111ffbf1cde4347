/** Label selectors: a table of Kubernetes' forms and their meaning, errors with columns, and properties. */
import { expect } from 'chai';
import fc from 'fast-check';
import { formatSelector, matches, parseSelector, parseSelectors, SelectorError } from '../../../src/cli/selector';

const demo = { suite: 'demo', model: 'm1' };
const other = { suite: 'other' };
const none = {};

describe('label selectors', function () {
  const table: [string, boolean, boolean, boolean][] = [
    // selector, matches demo, matches other, matches no labels
    ['suite=demo', true, false, false],
    ['suite==demo', true, false, false],
    ['suite!=demo', false, true, true],
    ['suite in (demo,x)', true, false, false],
    ['suite in (demo)', true, false, false],
    ['suite notin (demo)', false, true, true],
    ['suite', true, true, false],
    ['!suite', false, false, true],
    ['model', true, false, false],
    ['!model', false, true, true],
    ['suite,model=m1', true, false, false],
    ['suite=demo,!model', false, false, false],
    ['  suite  in ( demo , other ) , model notin (m2) ', true, true, false],
    ['suite=', false, false, false],
    ['', true, true, true],
  ];
  for (const [sel, a, b, c] of table) {
    it(`${JSON.stringify(sel)}: ${a}/${b}/${c}`, function () {
      const s = parseSelector(sel);
      expect([matches(s, demo), matches(s, other), matches(s, none)]).to.deep.equal([a, b, c]);
    });
  }

  it('keys with a DNS prefix', function () {
    expect(matches(parseSelector('dev.berth/team=x'), { 'dev.berth/team': 'x' })).to.equal(true);
  });

  const bad: [string, number, RegExp][] = [
    ['suite in (demo', 15, /expected "," or "\)"/],
    ['suite in demo', 10, /expected "\(" after in/],
    ['=demo', 1, /expected a label key/],
    ['suite=demo,', 12, /expected a label key, found the end/],
    ['suite demo', 7, /expected =, ==, !=, in, notin/],
    ['suite=a b', 9, /expected "," or the end/],
    ['!suite=demo', 7, /expected "," or the end, found "="/],
    ['su ite', 4, /expected =/],
    ['-bad=x', 1, /invalid label key "-bad"/],
    ['k=v$', 3, /invalid label value "v\$"/],
    ['k in ()', 7, /at least one value/],
    ['Bad_/x=1', 1, /invalid label key prefix/],
  ];
  for (const [sel, col, re] of bad) {
    it(`refuses ${JSON.stringify(sel)} at column ${col}`, function () {
      let err: unknown;
      try {
        parseSelector(sel);
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(SelectorError);
      expect((err as SelectorError).message).to.match(re);
      expect((err as SelectorError).offset + 1).to.equal(col);
    });
  }

  it('several -l flags join with "and"', function () {
    const s = parseSelectors(['suite', 'model=m1']);
    expect([matches(s, demo), matches(s, other)]).to.deep.equal([true, false]);
  });

  const name = fc.stringMatching(/^[a-z0-9]([a-z0-9_.-]{0,8}[a-z0-9])?$/);
  const req = fc.oneof(
    fc.record({ key: name, op: fc.constantFrom('exists' as const, '!exists' as const) }),
    fc.record({ key: name, op: fc.constantFrom('=' as const, '!=' as const), value: name }),
    fc.record({ key: name, op: fc.constantFrom('in' as const, 'notin' as const), values: fc.array(name, { minLength: 1, maxLength: 3 }) }),
  );

  it('property: the canonical text parses back to the same requirements', function () {
    fc.assert(
      fc.property(fc.array(req, { maxLength: 4 }), (sel) => {
        expect(parseSelector(formatSelector(sel))).to.deep.equal(sel);
      }),
    );
  });

  it('property: != and notin are the negations of = and in', function () {
    fc.assert(
      fc.property(name, name, fc.dictionary(name, name), (k, v, labels) => {
        expect(matches(parseSelector(`${k}!=${v}`), labels)).to.equal(!matches(parseSelector(`${k}=${v}`), labels));
        expect(matches(parseSelector(`${k} notin (${v})`), labels)).to.equal(!matches(parseSelector(`${k} in (${v})`), labels));
        expect(matches(parseSelector(`!${k}`), labels)).to.equal(!matches(parseSelector(k), labels));
      }),
    );
  });

  it('property: any text either parses or throws a SelectorError, never something else', function () {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'ab=!(), in'.split('')), maxLength: 20 }), (s) => {
        try {
          parseSelector(s);
        } catch (e) {
          expect(e).to.be.instanceOf(SelectorError);
        }
      }),
    );
  });
});
