/**
 * SpecSource over a watched folder: a change reloads only the files it names (spec/folder-load.ts),
 * the names it changes are handed on (also an unchanged file's whose name a change clashes
 * with), and a change made while a load is under way is never lost.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SpecSource } from '../../../src/controller/spec-source';
import type { LoadReport } from '../../../src/spec/loader';
import { silentLogger } from '../../../src/util/log';

const spec = (name: string, cmd = 'echo, one') =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [${cmd}]\n`;
const commandOf = (l: LoadReport, name: string) => l.specs.find((s) => s.spec.name === name)?.spec.command;

describe('SpecSource over a specs folder, file by file', function () {
  let dir: string;
  let specs: string;
  let handed: string[][];
  let src: SpecSource;
  const at = (f: string) => path.join(specs, f);

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-specsource-files-'));
    specs = path.join(dir, 'specs');
    await fs.mkdir(specs);
    await Promise.all(Array.from({ length: 200 }, (_, i) => fs.writeFile(at(`s${i}.yaml`), spec(`s${i}`))));
    handed = [];
    src = new SpecSource({ specsDir: specs, resultsRoot: path.join(dir, 'results'), debounceMs: 10, log: silentLogger() }, (names) => handed.push(names));
    const all = await src.specs();
    expect(all.errors).to.deep.equal([]);
    expect(all.specs).to.have.length(200);
    handed = [];
  });
  afterEach(async function () {
    await src.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('an edit made while a load is under way is loaded by the next look', async function () {
    await fs.writeFile(at('s1.yaml'), spec('s1', 'echo, two'));
    src.noteChange('change', at('s1.yaml'));
    const first = src.specs();
    // Changed again before the load above has answered: a look from now on must see it.
    await fs.writeFile(at('s1.yaml'), spec('s1', 'echo, three'));
    src.noteChange('change', at('s1.yaml'));
    const next = src.specs();
    await first;
    expect(commandOf(await next, 's1')).to.deep.equal(['echo', 'three']);
    expect(commandOf(await src.specs(), 's1')).to.deep.equal(['echo', 'three']);
    expect(handed.flat()).to.include('s1');
  });

  it("hands on an unchanged file's name when a change clashes with it, and again when it is undone", async function () {
    await fs.writeFile(at('s2.yaml'), spec('s1'));
    src.noteChange('change', at('s2.yaml'));
    const clash = await src.specs();
    expect(clash.protectedNames.has('s1')).to.equal(true);
    expect(handed.at(-1)).to.deep.equal(['s1', 's2']);
    await fs.writeFile(at('s2.yaml'), spec('s2'));
    src.noteChange('change', at('s2.yaml'));
    await src.specs();
    expect(handed.at(-1)).to.deep.equal(['s1', 's2']);
  });

  it('a rename hands on nothing (the attempt is the same), a delete hands on its name', async function () {
    await fs.rename(at('s3.yaml'), at('moved.yaml'));
    src.noteChange('unlink', at('s3.yaml'));
    src.noteChange('add', at('moved.yaml'));
    const moved = await src.specs();
    expect(moved.files.some((f) => f.endsWith('moved.yaml'))).to.equal(true);
    expect(handed).to.deep.equal([]);
    await fs.unlink(at('moved.yaml'));
    src.noteChange('unlink', at('moved.yaml'));
    expect((await src.specs()).specs.map((s) => s.spec.name)).to.not.include('s3');
    expect(handed).to.deep.equal([['s3']]);
  });

  it('a file written into the watched folder is loaded and its name handed on', async function () {
    let seen: (names: string[]) => void = () => undefined;
    const watched = new SpecSource({ specsDir: specs, resultsRoot: path.join(dir, 'results'), debounceMs: 10, log: silentLogger() }, (names) => seen(names));
    try {
      await watched.specs();
      watched.watch();
      await watched.ready();
      const got = new Promise<string[]>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('no change handed on within 10 s')), 10_000);
        seen = (names) => {
          clearTimeout(t);
          resolve(names);
        };
      });
      await fs.writeFile(at('new.yaml'), spec('fresh'));
      expect(await got).to.deep.equal(['fresh']);
      expect((await watched.specs()).specs.map((s) => s.spec.name)).to.include('fresh');
    } finally {
      await watched.close();
    }
  });
});
