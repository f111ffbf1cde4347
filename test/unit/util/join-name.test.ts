import { expect } from 'chai';
import fc from 'fast-check';
import * as path from 'node:path';
import { joinName } from '../../../src/util/join-name';

describe('joinName (path.join without its normalize, for a folder and a plain name)', () => {
  const dirs = [
    '',
    '.',
    '..',
    '/',
    '/a',
    '/a/',
    '/a/b',
    '/a//b',
    '/a/./b',
    '/a/../b',
    '/a/b/.',
    '/a/b/..',
    'a',
    'a/',
    'a/b',
    './a',
    'a/./b',
    'a/..',
    '../a',
    '//a',
  ];
  const names = ['x', 'x.yaml', '.hidden', '..x', 'x..', '', '.', '..', 'a/b', '/x', 'x/'];

  it('gives what path.join gives, for every folder and name (plain or not)', () => {
    for (const d of dirs) for (const n of names) expect(joinName(d, n), `${JSON.stringify(d)} + ${JSON.stringify(n)}`).to.equal(path.join(d, n));
  });

  it('gives what path.join gives for any folder and name made of separators, dots and letters', () => {
    const part = fc.stringMatching(/^[a-c./]{0,12}$/);
    fc.assert(
      fc.property(part, part, (d, n) => joinName(d, n) === path.join(d, n)),
      { numRuns: 2000 },
    );
  });

  it('gives the same answer again for a folder it has seen (its memo)', () => {
    for (let i = 0; i < 3; i++) for (const d of dirs) expect(joinName(d, 'f.json')).to.equal(path.join(d, 'f.json'));
  });

  it('stays right past its memo bound', () => {
    for (let i = 0; i < 200; i++) expect(joinName(`/r/d${i}`, 'f')).to.equal(`/r/d${i}/f`);
    expect(joinName('/a/../b', 'f')).to.equal('/b/f');
  });
});
