/** Reasons are named once (REASONS in src/constants.ts) and docs/CONTRACT.md lists exactly them. */
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { REASONS } from '../../src/constants';

const REPO = path.resolve(__dirname, '..', '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('reasons', () => {
  it('no source file outside src/constants.ts spells a reason', () => {
    const values = Object.values(REASONS);
    const spelled: string[] = [];
    for (const file of sources(path.join(REPO, 'src'))) {
      // the egress proxy is its own program: its `reason`s are HTTP refusals, not status reasons
      if (file.endsWith(path.join('src', 'constants.ts')) || file.includes(`${path.sep}src${path.sep}proxy${path.sep}`)) continue;
      const text = readFileSync(file, 'utf8');
      for (const v of values) if (text.includes(`'${v}'`) || text.includes(`"${v}"`)) spelled.push(`${path.relative(REPO, file)}: ${v}`);
      for (const m of text.matchAll(/reason\s*(?::|===|!==)\s*'([A-Z][A-Za-z]+)'/g)) spelled.push(`${path.relative(REPO, file)}: ${m[1]}`);
    }
    expect(spelled).to.deep.equal([]);
  });

  it('docs/CONTRACT.md lists exactly the reasons of REASONS', () => {
    const doc = readFileSync(path.join(REPO, 'docs', 'CONTRACT.md'), 'utf8');
    const section = doc.slice(doc.indexOf('- **Reasons**'), doc.indexOf('- **Times**'));
    const listed = [...section.matchAll(/`([A-Z][A-Za-z]+)`/g)].map((m) => m[1]).filter((r) => r !== 'REASONS');
    expect([...new Set(listed)].sort()).to.deep.equal(Object.values(REASONS).slice().sort());
  });
});
