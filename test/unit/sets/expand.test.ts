/** AttemptSet expansion: golden expansions and properties of child names (fast-check). */
import { expect } from 'chai';
import fc from 'fast-check';
import { SET_LIMITS } from '../../../src/constants';
import { attemptSchema } from '../../../src/spec/schema';
import { childName, expand, legacyChildName, type AxisIn, type ExpandInput } from '../../../src/spec/set-expand';

const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function names(inp: ExpandInput): string[] {
  const r = expand(inp);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.children.map((c) => c.name);
}

describe('spec/set-expand (golden)', () => {
  it('expands the product in axis order, excludes, then includes, with readable names in axis-name order', () => {
    const r = expand({
      set: 'swe',
      axes: [
        { name: 'model', values: ['m1', 'm2'] },
        { name: 'task', values: ['t1', 't2'] },
        { name: 'seed', values: ['0', '1'] },
      ],
      exclude: [{ model: 'm2', task: 't2' }],
      include: [
        { model: 'm3', task: 't1', seed: '0' },
        { model: 'm1', task: 't1', seed: '0' },
      ],
    });
    expect(r.ok).to.equal(true);
    if (!r.ok) return;
    expect(r.children.map((c) => [c.name, c.index])).to.deep.equal([
      ['swe-m1-0-t1', 0],
      ['swe-m1-1-t1', 1],
      ['swe-m1-0-t2', 2],
      ['swe-m1-1-t2', 3],
      ['swe-m2-0-t1', 4],
      ['swe-m2-1-t1', 5],
      ['swe-m3-0-t1', 6],
    ]);
    expect(r.children[6]?.coords).to.deep.equal({ model: 'm3', task: 't1', seed: '0' });
  });

  it('names a cell readably whatever its values: slugs and a hash where a value is not lowercase letters and digits, or the name too long', () => {
    expect(childName('s', { model: 'openai/gpt-4o' })).to.equal(childName('s', { model: 'openai/gpt-4o' }));
    expect(childName('s', { model: 'openai/gpt-4o' })).to.match(/^s-openai-gpt-4o-[0-9a-f]{10}$/);
    // a '-' could make two cells one name: the hash keeps them apart
    expect(childName('swe', { task: 'django-11099', model: 'm1' })).to.match(/^swe-m1-django-11099-[0-9a-f]{10}$/);
    const ab = childName('s', { x: 'a-b', y: 'c' });
    const bc = childName('s', { x: 'a', y: 'b-c' });
    expect(ab.slice(0, -10)).to.equal(bc.slice(0, -10));
    expect(ab).to.not.equal(bc);
    expect(childName('s', { model: 'M1' })).to.match(/^s-m1-[0-9a-f]{10}$/);
    expect(childName('s', { model: 'M1' })).to.not.equal(childName('s', { model: 'm1' }));
    expect(childName('s', { a: 'é' })).to.match(/^s-x-[0-9a-f]{10}$/);
    const long = 'x'.repeat(62);
    expect(childName('s', { a: long })).to.equal(`s-${'x'.repeat(50)}-${childName('s', { a: long }).slice(-10)}`);
    const longSet = `a${'-b'.repeat(30)}`;
    const n = childName(longSet, { model: 'Z' });
    expect(n.length).to.be.at.most(63);
    expect(n).to.match(DNS1123);
    expect(n).to.match(/-z-[0-9a-f]{10}$/);
    // more axes than a character of each fits: the set and a hash
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`a${i}`, `v-${i}`]));
    expect(childName('set', many)).to.match(/^set-[0-9a-f]{16}$/);
  });

  it('the names berth gave before (legacyChildName): the same readable ones, else <set>--<16 hex>; a record under one keeps it', () => {
    expect(legacyChildName('s', { a: 'x', b: '1' })).to.equal('s-x-1');
    expect(legacyChildName('s', { a: 'x', b: '1' })).to.equal(childName('s', { a: 'x', b: '1' }));
    const old = legacyChildName('swe', { task: 'django-11099' });
    expect(old).to.match(/^swe--[0-9a-f]{16}$/);
    // the hash is the same cell's: the new name's tail is the legacy name's head
    expect(old.slice(5, 15)).to.equal(childName('swe', { task: 'django-11099' }).slice(-10));
    const axes: AxisIn[] = [{ name: 'task', values: ['django-11099', 'flask-1', 'ok'] }];
    const kept = expand({ set: 'swe', axes, include: [], exclude: [], kept: new Set([old, 'other--0123456789abcdef']) });
    expect(kept.ok && kept.children.map((c) => c.name)).to.deep.equal([old, childName('swe', { task: 'flask-1' }), 'swe-ok']);
    const fresh = expand({ set: 'swe', axes, include: [], exclude: [] });
    expect(fresh.ok && fresh.children.map((c) => c.name)).to.deep.equal([...axes[0]!.values].map((v) => childName('swe', { task: v })));
  });

  it('reports empty axes, repeated values, unknown or missing axes in include/exclude', () => {
    const r = expand({
      set: 's',
      axes: [
        { name: 'a', values: [] },
        { name: 'b', values: ['1', '1'], at: (i) => ['spec', 'matrix', 'b', i] },
      ],
      include: [{ a: 'x' }],
      exclude: [{ c: 'y' }],
    });
    expect(r.ok).to.equal(false);
    if (r.ok) return;
    expect(r.issues).to.deep.equal([
      { segs: ['spec', 'matrix', 'a'], message: 'axis "a" has no values' },
      { segs: ['spec', 'matrix', 'b', 1], message: 'axis "b" repeats the value "1" (item 0)' },
      { segs: ['spec', 'exclude', 0, 'c'], message: '"c" is not an axis of the matrix (axes: a, b)' },
      { segs: ['spec', 'include', 0], message: 'an include names a value for every axis; missing: b' },
    ]);
  });

  it('refuses a matrix whose every cell is excluded', () => {
    const r = expand({ set: 's', axes: [{ name: 'a', values: ['1', '2'] }], include: [], exclude: [{ a: '1' }, { a: '2' }] });
    expect(r).to.deep.equal({ ok: false, issues: [{ segs: ['spec', 'exclude'], message: 'every cell of the matrix is excluded: the set has no children' }] });
  });

  it(`refuses more than ${SET_LIMITS.maxChildren} children, and a huge matrix before expanding it`, () => {
    const big = (n: number, name = `a${n}`): AxisIn => ({ name, values: Array.from({ length: n }, (_, i) => String(i)) });
    const over = expand({ set: 's', axes: [big(101), big(100)], include: [], exclude: [] });
    expect(over.ok).to.equal(false);
    if (!over.ok) expect(over.issues[0]?.message).to.match(/has 10100 children; a set may have at most 10000 children .*spec\.maxChildren raises it/);
    // raised on purpose (spec.maxChildren), and lowered
    expect(names({ set: 's', axes: [big(101), big(100)], include: [], exclude: [], limit: 20_000 })).to.have.length(10_100);
    const low = expand({ set: 's', axes: [big(10)], include: [], exclude: [], limit: 5 });
    if (!low.ok) expect(low.issues[0]?.message).to.equal("the set has 10 children; this set's spec.maxChildren allows at most 5");
    expect(low.ok).to.equal(false);
    const huge = expand({ set: 's', axes: [big(1000), big(1000)], include: [], exclude: [] });
    expect(huge.ok).to.equal(false);
    if (!huge.ok) expect(huge.issues[0]?.message).to.match(/1000000 cells/);
    expect(names({ set: 's', axes: [big(100), big(100, 'b')], include: [], exclude: [] })).to.have.length(10_000);
  });
});

describe('spec.maxChildren in the schema', () => {
  it('defaults to SET_LIMITS.maxChildren (the description says it) and stops at SET_LIMITS.maxChildrenCeiling', () => {
    const p = (attemptSchema() as { $defs: { setSpec: { properties: { maxChildren: { maximum: number; description: string } } } } }).$defs.setSpec.properties
      .maxChildren;
    expect(p.maximum).to.equal(SET_LIMITS.maxChildrenCeiling);
    expect(p.description).to.include(`Default ${SET_LIMITS.maxChildren}`);
  });
});

describe('spec/set-expand (properties)', () => {
  const value = fc.oneof(fc.stringMatching(/^[a-z0-9]{1,6}$/), fc.stringMatching(/^[A-Za-z0-9./_-]{1,12}$/), fc.integer({ min: -5, max: 50 }).map(String));
  const axes = fc
    .uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/), { minLength: 1, maxLength: 4 })
    .chain((ns) => fc.tuple(...ns.map((n) => fc.uniqueArray(value, { minLength: 1, maxLength: 4 }).map((values): AxisIn => ({ name: n, values })))));
  const setName = fc.stringMatching(/^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$/);

  const shuffle = <T>(xs: readonly T[], seed: number): T[] => {
    const out = [...xs];
    let s = seed;
    for (let i = out.length - 1; i > 0; i--) {
      s = (s * 1103515245 + 12345) & 0x7fffffff;
      const j = s % (i + 1);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  };

  it('names are DNS-1123 labels of at most 63 characters, and two children never share one', () => {
    fc.assert(
      fc.property(setName, axes, (set, ax) => {
        const ns = names({ set, axes: ax, include: [], exclude: [] });
        expect(new Set(ns).size).to.equal(ns.length);
        for (const n of ns) {
          expect(n.length).to.be.at.most(63);
          expect(n).to.match(DNS1123);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('names each cell of the product as childName names its coordinates', () => {
    fc.assert(
      fc.property(setName, axes, (set, ax) => {
        const r = expand({ set, axes: ax, include: [], exclude: [] });
        if (!r.ok) return;
        for (const c of r.children) expect(c.name).to.equal(childName(set, c.coords));
      }),
      { numRuns: 300 },
    );
    // Around 63 characters: the plain form up to it, slugs and a hash past it.
    const long = 's'.repeat(55);
    const r = expand({ set: long, axes: [{ name: 'a', values: ['1', '1234567', '12345678'] }], include: [], exclude: [] });
    expect(r.ok && r.children.map((c) => [c.name.length, c.name.includes('--'), c.name === childName(long, c.coords)])).to.deep.equal([
      [57, false, true],
      [63, false, true],
      [63, false, true],
    ]);
  });

  it('reordering axes or values renames nothing', () => {
    fc.assert(
      fc.property(setName, axes, fc.integer({ min: 1, max: 1e6 }), (set, ax, seed) => {
        const a = names({ set, axes: ax, include: [], exclude: [] });
        const shuffled = shuffle(ax, seed).map((x, i) => ({ ...x, values: shuffle(x.values, seed + i) }));
        const b = names({ set, axes: shuffled, include: [], exclude: [] });
        expect([...b].sort()).to.deep.equal([...a].sort());
      }),
      { numRuns: 300 },
    );
  });

  it('adding one value adds exactly the children that carry it', () => {
    fc.assert(
      fc.property(setName, axes, fc.nat(), value, (set, ax, k, extra) => {
        const i = k % ax.length;
        const axis = ax[i] as AxisIn;
        fc.pre(!axis.values.includes(extra));
        const before = expand({ set, axes: ax, include: [], exclude: [] });
        const grown = ax.map((x, j) => (j === i ? { ...x, values: [...x.values, extra] } : x));
        const after = expand({ set, axes: grown, include: [], exclude: [] });
        if (!before.ok || !after.ok) throw new Error('expansion failed');
        const old = new Set(before.children.map((c) => c.name));
        const added = after.children.filter((c) => !old.has(c.name));
        expect(after.children.filter((c) => old.has(c.name))).to.have.length(before.children.length);
        expect(added.every((c) => c.coords[axis.name] === extra)).to.equal(true);
        expect(added).to.have.length(before.children.length / axis.values.length);
        for (const c of before.children) expect(after.children.find((x) => x.name === c.name)?.coords).to.deep.equal(c.coords);
      }),
      { numRuns: 300 },
    );
  });

  it('adding an include renames nothing', () => {
    fc.assert(
      fc.property(setName, axes, fc.array(value, { minLength: 4, maxLength: 4 }), (set, ax, vals) => {
        const before = names({ set, axes: ax, include: [], exclude: [] });
        const cell = Object.fromEntries(ax.map((x, i) => [x.name, vals[i] as string]));
        const after = names({ set, axes: ax, include: [cell], exclude: [] });
        expect(after.slice(0, before.length)).to.deep.equal(before);
        expect(after.length - before.length).to.be.within(0, 1);
      }),
      { numRuns: 200 },
    );
  });
});
