/** isInside: the prefix test on normal paths agrees with the path.relative reference everywhere. */
import { expect } from 'chai';
import fc from 'fast-check';
import * as path from 'node:path';
import { isInside } from '../../../src/spec/path-util';

function reference(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

describe('spec/path-util isInside', () => {
  it('agrees with path.relative for normal and odd paths alike', () => {
    const seg = fc.constantFrom('a', 'b', 'ab', 'a-b', '..', '.', '', 'results', 'spec s');
    const p = fc.array(seg, { minLength: 0, maxLength: 5 }).map((xs) => `/${xs.join('/')}`);
    fc.assert(
      fc.property(p, p, (root, x) => {
        expect(isInside(root, x), `${root} ${x}`).to.equal(reference(root, x));
        expect(isInside(path.resolve(root), path.resolve(x))).to.equal(reference(root, x));
      }),
      { numRuns: 2000 },
    );
    expect(isInside('/r', '/r/x')).to.equal(true);
    expect(isInside('/r', '/rx')).to.equal(false);
    expect(isInside('/r', '/r')).to.equal(false);
    expect(isInside('/', '/a')).to.equal(true);
  });
});
