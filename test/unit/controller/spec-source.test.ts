/**
 * SpecSource with a git source: a new revision that comes in while a load of the old one is
 * under way is loaded and handed on (the old load must not answer for it). Found by the git
 * bench: a webhook's commit waited for the next resync.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SpecSource } from '../../../src/controller/spec-source';
import type { Revision } from '../../../src/git/source';
import { silentLogger } from '../../../src/util/log';

const spec = (name: string) => `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n`;

describe('SpecSource over git revisions', function () {
  let dir: string;
  before(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-specsource-'));
  });
  after(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('a revision switched to while the previous one loads is loaded next and its names handed on', async function () {
    const revA = { revision: 'a'.repeat(40), dir: path.join(dir, 'rev-a') };
    const revB = { revision: 'b'.repeat(40), dir: path.join(dir, 'rev-b') };
    await fs.mkdir(revA.dir);
    await fs.mkdir(revB.dir);
    // many files, so the load of A is still under way when B comes in
    await Promise.all(Array.from({ length: 300 }, (_, i) => fs.writeFile(path.join(revA.dir, `a${i}.yaml`), spec(`a${i}`))));
    await fs.writeFile(path.join(revB.dir, 'b.yaml'), spec('b'));
    let current: Revision = revA;
    const handed: string[][] = [];
    let onB: () => void = () => undefined;
    const sawB = new Promise<void>((resolve) => (onB = resolve));
    const src = new SpecSource(
      { specsDir: dir, resultsRoot: path.join(dir, 'results'), debounceMs: 10, log: silentLogger(), git: { current: () => current, url: 'file:///r' } },
      (names, load) => {
        handed.push(names);
        if (load.revision === revB.revision) onB();
      },
    );
    const first = src.specs();
    current = revB;
    src.reload();
    expect((await first).revision).to.equal(revA.revision);
    await sawB;
    expect(handed.at(-1)).to.include('b');
    expect((await src.specs()).revision).to.equal(revB.revision);
  });
});
