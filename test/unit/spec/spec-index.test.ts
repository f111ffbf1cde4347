/**
 * spec/spec-index.ts: an index handed on from one load to the next (a few names removed and
 * added, spec/quick-update.ts) answers as an index made from the new specs does, over a long
 * chain of such loads and past the point where it is made flat again.
 */
import { expect } from 'chai';
import { deriveSpecIndex, specIndex, specsNamed } from '../../../src/spec/spec-index';
import type { LoadedSpec } from '../../../src/spec/types';

const spec = (name: string, v = 0) => ({ spec: { name }, hash: `${name}:${v}` }) as unknown as LoadedSpec;

describe('spec/spec-index: an index handed on', () => {
  it('answers every name as a fresh index does, along 6,000 changes', () => {
    let specs = Array.from({ length: 500 }, (_, i) => spec(`a${i}`));
    let seed = 7;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let step = 0; step < 6000; step++) {
      const removed: string[] = [];
      const added: LoadedSpec[] = [];
      const kind = rnd(3);
      let next = specs;
      if (kind !== 1 && specs.length) {
        const victim = specs[rnd(specs.length)] as LoadedSpec;
        removed.push(victim.spec.name);
        next = next.filter((s) => s !== victim);
      }
      if (kind !== 0) {
        // a new name, or one removed (now or before) coming back with a new spec
        const name = rnd(2) ? `n${step}` : (removed[0] ?? `a${rnd(600)}`);
        if (!next.some((s) => s.spec.name === name)) {
          const s = spec(name, step);
          added.push(s);
          next = [...next, s];
        }
      }
      if (step % 3 === 0) specIndex(specs); // sometimes the index before was made, sometimes not
      deriveSpecIndex(next, specs, removed, added);
      specs = next;
      if (step % 250 === 0 || step > 5990) {
        const fresh = new Map(specs.map((s) => [s.spec.name, s]));
        const got = specIndex(specs).byName;
        for (const n of [...fresh.keys(), ...Array.from({ length: 700 }, (_, i) => `a${i}`), `n${step}`, `n${step - 1}`]) {
          expect(got.get(n), n).to.equal(fresh.get(n));
          expect(got.has(n), n).to.equal(fresh.has(n));
        }
        const some = new Set([...fresh.keys()].slice(0, 5));
        expect(specsNamed(specs, some)).to.deep.equal(specs.filter((s) => some.has(s.spec.name)));
      }
    }
  });
});
