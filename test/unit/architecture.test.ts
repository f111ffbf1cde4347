/**
 * The house's floors (docs/ARCHITECTURE.md): every import in src/ between its top-level folders
 * (a file directly under src/ is one of its own) goes from a higher floor to a lower one, and no
 * folders import each other in a loop. Type-only imports count too: a loop of types is still a
 * loop a reader has to follow. A new folder must be given its floor here.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const SRC = path.resolve(__dirname, '..', '..', 'src');

/** Lowest first. */
const FLOORS = [
  'util',
  'constants',
  'policy',
  'engine',
  'registry',
  'backend',
  'status',
  'ownership',
  'spec',
  'sets',
  'proxy',
  'workspace',
  'pack',
  'harvest',
  'touch',
  'desired',
  'attest',
  'observe',
  'plan',
  'build',
  'execute',
  'report',
  'bundle',
  'git',
  'controller',
  'api',
  'cli',
];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    return statSync(p).isDirectory() ? files(p) : n.endsWith('.ts') ? [p] : [];
  });
}

const topOf = (abs: string): string => path.relative(SRC, abs).split(path.sep)[0]!.replace(/\.ts$/, '');

/** Folder → folders it imports, with the lines that do. */
function folderImports(): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  const re = /(?:\bfrom\s*|\brequire\(\s*|\bimport\(\s*|^import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;
  for (const f of files(SRC)) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(re)) {
      const target = path.resolve(path.dirname(f), m[1]!);
      if (!target.startsWith(SRC + path.sep)) continue;
      const [a, b] = [topOf(f), topOf(target)];
      if (a === b) continue;
      const by = out.get(a) ?? new Map<string, string[]>();
      by.set(b, [...(by.get(b) ?? []), `${path.relative(SRC, f)} -> ${m[1]}`]);
      out.set(a, by);
    }
  }
  return out;
}

describe('architecture: the floors of src/', () => {
  const graph = folderImports();

  it('every folder of src/ has a floor', () => {
    const tops = [...new Set(files(SRC).map(topOf))].sort();
    expect(tops.filter((t) => !FLOORS.includes(t))).to.deep.equal([]);
  });

  it('no import climbs from a lower floor to a higher one', () => {
    const up: string[] = [];
    for (const [a, by] of graph) for (const [b, lines] of by) if (FLOORS.indexOf(b) > FLOORS.indexOf(a)) up.push(...lines);
    expect(up).to.deep.equal([]);
  });

  it('no two folders import each other, directly or around a loop', () => {
    // With every import going down (above), a loop would need one going up; checked on its own
    // all the same, so that a wrong floor list cannot hide one.
    const loops: string[] = [];
    const seen = new Set<string>();
    const visit = (node: string, trail: string[]): void => {
      if (trail.includes(node)) {
        loops.push([...trail.slice(trail.indexOf(node)), node].join(' -> '));
        return;
      }
      if (seen.has(node)) return;
      for (const next of graph.get(node)?.keys() ?? []) visit(next, [...trail, node]);
      seen.add(node);
    };
    for (const node of graph.keys()) visit(node, []);
    expect(loops).to.deep.equal([]);
  });
});
