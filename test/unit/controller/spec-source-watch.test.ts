/**
 * SpecSource watching a real folder (chokidar, through controller/specs-watch.ts): every kind of
 * change ends in a load equal to a fresh full load of the folder as it is then; a change a name can place is an update of the files named (no walk),
 * one it cannot (a
 * folder made, removed, renamed or replaced, the root replaced or gone, a burst) a walk. The
 * folders made are watched from then on; dot-folders and links are not.
 */
import { expect } from 'chai';
import { mkdirSync, openSync, closeSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { SpecSource } from '../../../src/controller/spec-source';
import type { LoadReport } from '../../../src/spec/loader';
import { silentLogger } from '../../../src/util/log';
import { SpecsWatch } from '../../../src/controller/specs-watch';
import { isIgnoredName } from '../../../src/spec/walk';
import { cleanupTemp, doc, loadSummary, sandbox, tempDir, writeTree, type Sandbox } from '../spec/helpers';

const commandOf = (l: LoadReport | undefined, name: string) => l?.specs.find((s) => s.spec.name === name)?.spec.command;

describe('SpecSource watching a real folder: each change ends equal to a fresh full load', function () {
  this.timeout(30_000);
  let sb: Sandbox;
  let src: SpecSource;
  /** Every load the source made, and whether it walked the folder. */
  let loads: { load: LoadReport; walked: boolean }[];
  /** Every load since start, never cleared. */
  let every: LoadReport[];
  let wake: () => void = () => undefined;
  const at = (rel: string) => path.join(sb.specs, rel);

  const start = async (extra: { burstLimit?: number; settleMs?: number } = {}) => {
    loads = [];
    every = [];
    src = new SpecSource(
      {
        specsDir: sb.specs,
        resultsRoot: sb.results,
        debounceMs: 10,
        settleMs: extra.settleMs ?? 20,
        log: silentLogger(),
        ...(extra.burstLimit !== undefined ? { burstLimit: extra.burstLimit } : {}),
        onLoaded: (load, walked) => {
          loads.push({ load, walked });
          every.push(load);
          wake();
        },
      },
      () => undefined,
    );
    const first = await src.specs();
    expect(loadSummary(first)).to.deep.equal(loadSummary(await sb.load()));
    src.watch();
    await src.ready();
    loads = [];
    every = [];
  };

  /**
   * Waits (on the source's loads, no polling) until a load made after the change equals a fresh
   * full load of the folder now; answers whether any load since walked the folder.
   */
  const settled = async (): Promise<{ walked: boolean; loads: number }> => {
    const want = loadSummary(await sb.load());
    const deadline = Date.now() + 15_000;
    for (;;) {
      const last = loads.at(-1);
      if (last && JSON.stringify(loadSummary(last.load)) === JSON.stringify(want)) {
        expect(loadSummary(src.latest() as LoadReport)).to.deep.equal(want);
        const out = { walked: loads.some((l) => l.walked), loads: loads.length };
        loads = [];
        return out;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        expect(last ? loadSummary(last.load) : 'no load since the change').to.deep.equal(want);
        throw new Error('not settled');
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  };

  /**
   * Waits until the watcher watches `folders` folders (chokidar reports a folder made, then adds
   * its watch: a load may settle before it is watched), then until the source has no load due or
   * under way (the walk that report asked for, if it comes after): what follows is then a change
   * of its own. Polls the folder count (chokidar tells nothing when a watch is added); waits on the
   * source's loads.
   */
  const caughtUp = async (folders: number): Promise<void> => {
    const deadline = Date.now() + 15_000;
    while (src.watching?.folders !== folders) {
      if (Date.now() > deadline) expect(src.watching?.folders).to.equal(folders);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    while (src.busy) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('the source kept loading');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 50));
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    loads = [];
  };

  beforeEach(async function () {
    sb = sandbox({ 'a.yaml': doc('a'), 'b.yaml': doc('b'), 'sub/c.yaml': doc('c'), 'README.md': 'not a spec' });
    await start();
  });
  afterEach(async function () {
    await src.close();
    cleanupTemp();
  });

  it('a file made, edited in place, renamed and removed: each an update of that file, no walk', async function () {
    writeFileSync(at('new.yaml'), doc('fresh'));
    expect(await settled()).to.include({ walked: false });
    writeFileSync(at('a.yaml'), doc('a', '  command: [echo, edited]\n'));
    expect(await settled()).to.include({ walked: false });
    expect(commandOf(src.latest(), 'a')).to.deep.equal(['echo', 'edited']);
    renameSync(at('b.yaml'), at('b-moved.yaml'));
    expect(await settled()).to.include({ walked: false });
    unlinkSync(at('new.yaml'));
    expect(await settled()).to.include({ walked: false });
    expect(src.latest()?.specs.map((s) => s.spec.name)).to.not.include('fresh');
    // and inside a subfolder watched from the start
    writeFileSync(at('sub/c.yaml'), doc('c', '  command: [echo, sub]\n'));
    expect(await settled()).to.include({ walked: false });
    expect(src.walks).to.equal(1);
  });

  it("an editor's atomic save (a temp file renamed over the spec) is an update; its swap and temp files change nothing", async function () {
    writeFileSync(at('.a.yaml.swp'), 'swap');
    writeFileSync(at('a.yaml.tmp'), doc('a', '  command: [echo, saved]\n'));
    renameSync(at('a.yaml.tmp'), at('a.yaml'));
    unlinkSync(at('.a.yaml.swp'));
    expect(await settled()).to.include({ walked: false });
    expect(commandOf(src.latest(), 'a')).to.deep.equal(['echo', 'saved']);
  });

  it('a file written in two parts is loaded whole: no load sees the first part alone', async function () {
    await src.close();
    await start({ settleMs: 2000 });
    // A second watcher on the folder: its event for the first part comes in the same read as the source's.
    let firstPartSeen: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => (firstPartSeen = resolve));
    const probe = new SpecsWatch(sb.specs, {
      ignored: isIgnoredName,
      onPath: (p) => p === at('half.yaml') && firstPartSeen(),
      onWhole: () => undefined,
      onError: () => undefined,
    });
    await probe.whenReady();
    try {
      const fd = openSync(at('half.yaml'), 'w');
      // the first part alone is a valid spec with a shorter command
      writeSync(fd, doc('half', '  command:\n    - echo\n'));
      await seen;
      // The writer pauses: 15 times the debounce, well under the settle time. Nothing to wait
      // for here but time: the point is that no load happens meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 150));
      writeSync(fd, '    - second-part\n');
      closeSync(fd);
      expect(await settled()).to.include({ walked: false });
    } finally {
      await probe.close();
    }
    expect(commandOf(src.latest(), 'half')).to.deep.equal(['echo', 'second-part']);
    expect(every.map((l) => commandOf(l, 'half'))).to.deep.equal([['echo', 'second-part']]);
  });

  it('a folder made with files in it is walked, and watched from then on (nested ones too)', async function () {
    mkdirSync(at('new/deep/er'), { recursive: true });
    writeFileSync(at('new/deep/er/n1.yaml'), doc('n1'));
    writeFileSync(at('new/n2.yaml'), doc('n2'));
    expect(await settled()).to.include({ walked: true });
    await caughtUp(5); // the root, sub, new, new/deep, new/deep/er
    writeFileSync(at('new/deep/er/n3.yaml'), doc('n3'));
    expect(await settled()).to.include({ walked: false });
    expect(src.latest()?.specs.map((s) => s.spec.name)).to.include.members(['n1', 'n2', 'n3']);
  });

  it('a folder removed, or renamed, is walked; the renamed one is watched under its new name', async function () {
    renameSync(at('sub'), at('sub2'));
    expect(await settled()).to.include({ walked: true });
    await caughtUp(2); // the root, sub2
    writeFileSync(at('sub2/d.yaml'), doc('d'));
    expect(await settled()).to.include({ walked: false });
    rmSync(at('sub2'), { recursive: true });
    expect(await settled()).to.include({ walked: true });
    expect(src.latest()?.specs.map((s) => s.spec.name)).to.have.members(['a', 'b']);
    expect(src.watching?.folders).to.equal(1);
  });

  it('inside a fixture: YAML edited is read alone, a folder made is no walk; .berthignore edited is a walk', async function () {
    await src.close();
    cleanupTemp();
    sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./repo\n'), 'repo/mkdocs.yml': 'site_name: x\n', 'repo/src/x.py': 'x' });
    await start();
    expect(src.latest()?.errors).to.deep.equal([]);
    writeFileSync(at('repo/mkdocs.yml'), 'site_name: [\n');
    expect(await settled()).to.include({ walked: false });
    expect(src.latest()?.errors).to.deep.equal([]);
    mkdirSync(at('repo/docs'));
    writeFileSync(at('repo/docs/compose.yml'), 'services: {}\n');
    expect(await settled()).to.include({ walked: false });
    expect(src.latest()?.errors).to.deep.equal([]);
    expect(src.walks).to.equal(1);
    // .berthignore is watched though it is a dot-file: its patterns decide which files are specs
    writeFileSync(at('drafts.yaml'), 'not: [valid\n');
    await settled();
    expect(src.latest()?.errors.length).to.be.greaterThan(0);
    writeFileSync(at('.berthignore'), 'drafts.yaml\n');
    expect(await settled()).to.include({ walked: true });
    expect(src.latest()?.errors).to.deep.equal([]);
  });

  it('dot-files and dot-folders are neither loaded nor watched', async function () {
    mkdirSync(at('.hidden'));
    writeFileSync(at('.hidden/h.yaml'), doc('h'));
    writeFileSync(at('.dot.yaml'), doc('dot'));
    writeFileSync(at('visible.yaml'), doc('visible'));
    expect(await settled()).to.include({ walked: false });
    expect(src.watching?.folders).to.equal(2);
    expect(src.latest()?.specs.map((s) => s.spec.name)).to.not.include.members(['h', 'dot']);
  });

  it('a link to a folder outside is not followed; a link inside makes every change a walk', async function () {
    const outside = tempDir('berth-outside-');
    writeTree(outside, { 'o.yaml': doc('o') });
    symlinkSync(outside, at('out'));
    expect(await settled()).to.include({ walked: true });
    // Written out there: nothing to see, nothing loaded (the marker proves the source has looked since).
    writeFileSync(path.join(outside, 'o2.yaml'), doc('o2'));
    writeFileSync(at('marker.yaml'), doc('marker'));
    await settled();
    expect(src.watching?.folders).to.equal(2);
    expect(src.latest()?.specs.map((s) => s.spec.name)).to.not.include.members(['o', 'o2']);
    symlinkSync(at('sub'), at('alias'));
    await settled();
    writeFileSync(at('sub/e.yaml'), doc('e'));
    expect(await settled()).to.include({ walked: true });
  });

  it('the root folder replaced by another is walked, and the new one watched', async function () {
    const next = path.join(sb.root, 'specs.next');
    writeTree(next, { 'x.yaml': doc('x'), 'xs/y.yaml': doc('y') });
    renameSync(sb.specs, path.join(sb.root, 'specs.old'));
    renameSync(next, sb.specs);
    expect(await settled()).to.include({ walked: true });
    expect(src.latest()?.specs.map((s) => s.spec.name)).to.have.members(['x', 'y']);
    await caughtUp(2); // the new root, xs
    writeFileSync(at('xs/z.yaml'), doc('z'));
    expect(await settled()).to.include({ walked: false });
    // the old root is no longer watched: a write there loads nothing
    writeFileSync(path.join(sb.root, 'specs.old', 'old.yaml'), doc('old'));
    writeFileSync(at('marker.yaml'), doc('marker'));
    await settled();
    expect(src.latest()?.specs.map((s) => s.spec.name)).to.not.include('old');
  });

  it('the root removed and made again is walked when it is back', async function () {
    rmSync(sb.specs, { recursive: true });
    mkdirSync(sb.specs);
    writeFileSync(at('back.yaml'), doc('back'));
    expect(await settled()).to.include({ walked: true });
    expect(src.latest()?.specs.map((s) => s.spec.name)).to.deep.equal(['back']);
    await caughtUp(1); // the root made again
    writeFileSync(at('again.yaml'), doc('again'));
    expect(await settled()).to.include({ walked: false });
  });

  it('a burst of events read at once (the kernel queue may have overflowed) is a walk', async function () {
    await src.close();
    await start({ burstLimit: 50 });
    // Written while this process reads no event: they arrive in one read.
    for (let i = 0; i < 100; i++) writeFileSync(at(`burst${i}.yaml`), doc(`burst${i}`));
    expect(await settled()).to.include({ walked: true });
    expect(src.latest()?.specs).to.have.length(103);
  });
});
