/**
 * isInside and isWithin: the prefix tests on normal paths agree with the path.relative reference
 * everywhere; so does displayPath's. RealCache: a folder read once answers as realpath does, links included.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { displayPath, isInside, isWithin, RealCache, realpathLooseSync } from '../../../src/spec/path-util';
import { cleanupTemp, tempDir } from './helpers';

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

describe('spec/path-util displayPath', () => {
  /** What displayPath answered by path.relative alone, for every path. */
  function displayReference(abs: string, cwd: string): string {
    const rel = path.relative(cwd, abs);
    return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : abs;
  }

  it('agrees with path.relative for paths under the working directory, beside it and above it, normal or odd', () => {
    const seg = fc.constantFrom('a', 'b', 'ab', '..', '.', '', '..a', 'spec s');
    const p = fc.array(seg, { minLength: 0, maxLength: 5 }).map((xs) => `/${xs.join('/')}`);
    const rel = fc.array(seg, { minLength: 1, maxLength: 3 }).map((xs) => xs.join('/'));
    fc.assert(
      fc.property(p, fc.oneof(p, rel), (cwd, abs) => {
        const under = cwd.endsWith('/') ? cwd : `${cwd}/`;
        // A name starting with '..' right under cwd ('/w/..a'): shown relative, as before (the
        // reference takes its '..a' for a way up).
        const dotted =
          path.isAbsolute(abs) && path.normalize(abs) === abs && !abs.endsWith('/') && abs.startsWith(under) && abs.slice(under.length).startsWith('..');
        expect(displayPath(abs, cwd), `${abs} from ${cwd}`).to.equal(dotted ? abs.slice(under.length) : displayReference(abs, cwd));
      }),
      { numRuns: 3000 },
    );
    expect(displayPath('/w/specs/a.yaml', '/w')).to.equal('specs/a.yaml');
    expect(displayPath('/tmp/specs/a.yaml', '/w')).to.equal('/tmp/specs/a.yaml');
    expect(displayPath('/wx/a.yaml', '/w')).to.equal('/wx/a.yaml');
    expect(displayPath('/w', '/w')).to.equal('/w');
    expect(displayPath('/a.yaml', '/')).to.equal('a.yaml');
    expect(displayPath('/w/..a.yaml', '/w')).to.equal('..a.yaml');
  });
});

describe('spec/path-util isWithin', () => {
  it('agrees with path.resolve equality or isInside for normal and odd paths alike', () => {
    const seg = fc.constantFrom('a', 'b', 'ab', '..', '.', '', 'results');
    const p = fc.array(seg, { minLength: 0, maxLength: 5 }).map((xs) => `/${xs.join('/')}`);
    fc.assert(
      fc.property(p, p, (root, x) => {
        expect(isWithin(root, x), `${root} ${x}`).to.equal(path.resolve(root) === path.resolve(x) || reference(root, x));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('spec/path-util RealCache', () => {
  afterEach(cleanupTemp);

  it('answers as realpath does once it reads a folder instead of asking entry by entry: links, folders, missing names', () => {
    const root = tempDir();
    const outside = tempDir();
    const dir = path.join(root, 'results');
    mkdirSync(dir);
    for (let i = 0; i < 20; i++) mkdirSync(path.join(dir, `d${i}`));
    symlinkSync(outside, path.join(dir, 'link-out'));
    symlinkSync(path.join(dir, 'd3'), path.join(dir, 'link-in'));
    const cache = new RealCache();
    const names = [...Array.from({ length: 20 }, (_, i) => `d${i}`), 'link-out', 'link-in', 'missing', 'missing2'];
    for (const n of [...names, ...names]) {
      const p = path.join(dir, n, 'run-1');
      expect(realpathLooseSync(p, cache), n).to.equal(realpathLooseSync(p));
    }
    expect(realpathLooseSync(path.join(dir, 'link-out', 'x'), cache)).to.equal(path.join(realpathSync(outside), 'x'));
    expect(realpathLooseSync(path.join(dir, 'missing'), cache)).to.equal(path.join(realpathSync(dir), 'missing'));
  });

  it('a folder that does not exist has no entries: its children resolve below its longest existing ancestor', () => {
    const root = tempDir();
    const cache = new RealCache();
    for (let i = 0; i < 20; i++) {
      const p = path.join(root, 'not-made', `c${i}`);
      expect(realpathLooseSync(p, cache)).to.equal(path.join(realpathSync(root), 'not-made', `c${i}`));
    }
  });
});
