/** The sets' last good expansions (spec/last-good.ts): kept by a writer, laid over a load where a set is broken. */
import { expect } from 'chai';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LAST_GOOD_SCHEMA_VERSION, LastGoodSets } from '../../../src/spec/last-good';
import { cleanupTemp, sandbox, tempDir, writeTree } from './helpers';

const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: grid, labels: {suite: demo}}
spec:
  matrix: {n: [0, 1, 2]}
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo \${{ matrix.n }}']
  score: {file: score.json, pass: 1}
`;

describe('spec/last-good: a set whose file breaks keeps its last good expansion', () => {
  afterEach(cleanupTemp);

  async function kept() {
    const sb = sandbox({
      'grid.yaml': SET,
      'solo.yaml': 'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: solo}\nspec: {image: berth/busybox:local}\n',
    });
    const lg = new LastGoodSets(tempDir('berth-state-'), 'default');
    const good = await sb.load();
    await lg.keep(good);
    return { sb, lg, good };
  }

  it('a writer keeps a set that loads whole, once: an unchanged expansion is not written again', async () => {
    const { sb, lg } = await kept();
    const file = path.join(lg.dir, 'grid.json');
    const header = JSON.parse(readFileSync(file, 'utf8').split('\n')[0] as string) as { schemaVersion: number; set: string; file: string };
    expect(header).to.include({ schemaVersion: LAST_GOOD_SCHEMA_VERSION, set: 'grid', file: 'grid.yaml' });
    const before = statSync(file).mtimeMs;
    // another process (a new LastGoodSets) with the same expansion reads the header and writes nothing
    await new LastGoodSets(path.dirname(path.dirname(lg.dir)), 'default').keep(await sb.load());
    expect(statSync(file).mtimeMs).to.equal(before);
  });

  for (const [what, broken] of [
    ['YAML that does not parse (a quote slip)', SET.replace('echo ${{', "echo '${{")],
    ['an unknown field', SET.replace('  matrix:', '  matrixx: 1\n  matrix:')],
    ['a fromDir that is missing', SET.replace('{n: [0, 1, 2]}', '{n: {fromDir: ./gone}}')],
  ] as const) {
    it(`${what}: the set and its children as last loaded, held by the errors; no name of the set protected`, async () => {
      const { sb, lg, good } = await kept();
      writeFileSync(path.join(sb.specs, 'grid.yaml'), broken);
      const raw = await sb.load();
      expect(raw.specs.map((s) => s.spec.name)).to.deep.equal(['solo']);
      const view = lg.apply(raw, sb.specs);
      expect(view.specs.map((s) => s.spec.name).sort()).to.deep.equal(['grid-0', 'grid-1', 'grid-2', 'solo']);
      for (const s of view.specs.filter((x) => x.set)) {
        const was = good.specs.find((g) => g.spec.name === s.spec.name);
        expect(s.hash).to.equal(was?.hash);
        expect(s.spec.labels).to.deep.equal(was?.spec.labels);
        expect(s.set?.set.score).to.deep.equal({ file: 'score.json', pass: 1 });
        expect(s.held?.length).to.be.greaterThan(0);
        expect(s.held?.[0]?.file).to.match(/grid\.yaml$/);
      }
      expect(view.sets?.get('grid')?.children).to.deep.equal(['grid-0', 'grid-1', 'grid-2']);
      expect(view.sets?.get('grid')?.held?.[0]?.file).to.match(/grid\.yaml$/);
      expect([...view.protectedNames]).to.deep.equal([]);
      expect(view.specs.find((s) => s.spec.name === 'solo')?.held).to.equal(undefined);
    });
  }

  it('a fixture briefly missing: the set loads, and only its children that do not keep their last good spec', async () => {
    const sb = sandbox({ 'grid.yaml': SET.replace('    command:', '    fixture: ./fx/${{ matrix.n }}\n    command:') });
    writeTree(sb.specs, { 'fx/0/a': 'a', 'fx/1/a': 'a', 'fx/2/a': 'a' });
    const lg = new LastGoodSets(tempDir('berth-state-'), 'default');
    await lg.keep(await sb.load());
    rmSync(path.join(sb.specs, 'fx', '1'), { recursive: true });
    const raw = await sb.load();
    expect([...raw.protectedNames]).to.deep.equal(['grid-1']);
    const view = lg.apply(raw, sb.specs);
    expect(view.specs.map((s) => [s.spec.name, s.held === undefined ? 'loaded' : 'held'])).to.deep.equal([
      ['grid-0', 'loaded'],
      ['grid-2', 'loaded'],
      ['grid-1', 'held'],
    ]);
    expect(view.specs[2]?.held?.[0]?.path).to.equal('spec.template.fixture');
    expect(view.sets?.get('grid')?.held).to.equal(undefined);
  });

  it('a set removed on purpose (its file readable, the set gone) is not held: its children go', async () => {
    const { sb, lg } = await kept();
    rmSync(path.join(sb.specs, 'grid.yaml'));
    writeFileSync(path.join(sb.specs, 'bad.yaml'), 'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: bad}\nspec: {image: 3}\n');
    const raw = await sb.load();
    expect(lg.apply(raw, sb.specs)).to.equal(raw);
  });

  it('a kept file of another version, or damaged, is no last good expansion', async () => {
    const { sb, lg } = await kept();
    const file = path.join(lg.dir, 'grid.json');
    const [head, body] = readFileSync(file, 'utf8').split('\n');
    writeFileSync(path.join(sb.specs, 'grid.yaml'), SET.replace('  matrix:', '\tmatrix:'));
    const raw = await sb.load();
    writeFileSync(
      file,
      `${(head as string).replace(`"schemaVersion":${LAST_GOOD_SCHEMA_VERSION}`, `"schemaVersion":${LAST_GOOD_SCHEMA_VERSION + 1}`)}\n${body}\n`,
    );
    expect(new LastGoodSets(path.dirname(path.dirname(lg.dir)), 'default').apply(raw, sb.specs).specs.map((s) => s.spec.name)).to.deep.equal(['solo']);
    writeFileSync(file, `${head}\n{"docs": [\n`);
    expect(new LastGoodSets(path.dirname(path.dirname(lg.dir)), 'default').apply(raw, sb.specs).specs.map((s) => s.spec.name)).to.deep.equal(['solo']);
  });
});
