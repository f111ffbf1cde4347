/**
 * A set's pinned images on disk (status/pins.ts): the first pin wins, it survives a restart, a new pin key pins anew, a file made
 * before pin keys is taken up.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ImagePins, pinOf } from '../../../src/status/pins';

const A = `sha256:${'a'.repeat(64)}`;
const B = `sha256:${'b'.repeat(64)}`;

describe('status/pins', function () {
  let dir: string;
  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-pins-'));
  });
  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('pins made at once for one reference: the first stays and every caller gets it; a new process reads it back', async function () {
    const pins = new ImagePins(dir, 'i');
    const got = await Promise.all([
      pins.pin('s', { pinKey: 't1', templateHash: 'h-t1' }, 'img:1', { id: A, repoDigests: [], at: 'x' }),
      pins.pin('s', { pinKey: 't1', templateHash: 'h-t1' }, 'img:1', { id: B, repoDigests: [], at: 'y' }),
      pins.pin('s', { pinKey: 't1', templateHash: 'h-t1' }, 'other:2', { id: B, repoDigests: ['other@sha256:1'], at: 'z' }),
    ]);
    expect(got.map((p) => p.id)).to.deep.equal([A, A, B]);
    const again = new ImagePins(dir, 'i').loadAll();
    expect(pinOf(again.get('s'), { pinKey: 't1' }, 'img:1')?.id).to.equal(A);
    expect(pinOf(again.get('s'), { pinKey: 't1' }, 'other:2')?.repoDigests).to.deep.equal(['other@sha256:1']);
    // another template: no pin holds, and the next pin replaces the set's pins
    expect(pinOf(again.get('s'), { pinKey: 't2' }, 'img:1')).to.equal(undefined);
    const fresh = new ImagePins(dir, 'i');
    expect((await fresh.pin('s', { pinKey: 't2', templateHash: 'h-t2' }, 'img:1', { id: B, repoDigests: [], at: 'w' })).id).to.equal(B);
    const after = new ImagePins(dir, 'i').loadAll().get('s');
    expect([after?.pinKey, after?.templateHash]).to.deep.equal(['t2', 'h-t2']);
    expect(Object.keys(after?.images ?? {})).to.deep.equal(['img:1']);
  });

  it('a damaged or foreign file counts as no pin (its set pins afresh); stray names are ignored', async function () {
    await fs.mkdir(path.join(dir, 'i', 'sets'), { recursive: true });
    await fs.writeFile(path.join(dir, 'i', 'sets', 's.json'), '{"set": "s", "templateHash": ');
    await fs.writeFile(path.join(dir, 'i', 'sets', 'u.json'), JSON.stringify({ set: 'other', templateHash: 't', images: {} }));
    await fs.writeFile(path.join(dir, 'i', 'sets', '.s.json.tmp'), 'x');
    const pins = new ImagePins(dir, 'i');
    expect([...pins.loadAll().keys()]).to.deep.equal([]);
    expect((await pins.pin('s', { pinKey: 't1', templateHash: 'h-t1' }, 'img:1', { id: A, repoDigests: [], at: 'x' })).id).to.equal(A);
    expect(pinOf(new ImagePins(dir, 'i').loadAll().get('s'), { pinKey: 't1' }, 'img:1')?.id).to.equal(A);
  });

  it('a file made before pin keys holds while its template is unchanged, and the first pass that finds it so gives it the key', async function () {
    await fs.mkdir(path.join(dir, 'i', 'sets'), { recursive: true });
    const old = { set: 's', templateHash: 'h1', images: { 'img:1': { id: A, repoDigests: [], at: 'x' } } };
    await fs.writeFile(path.join(dir, 'i', 'sets', 's.json'), JSON.stringify(old));
    const pins = new ImagePins(dir, 'i');
    expect(pinOf(pins.loadAll().get('s'), { pinKey: 'k1', templateHash: 'h1' }, 'img:1')?.id).to.equal(A);
    // the template was edited since (another template hash): it does not hold, and is not taken up
    expect(pinOf(pins.loadAll().get('s'), { pinKey: 'k1', templateHash: 'h2' }, 'img:1')).to.equal(undefined);
    expect(await pins.upgrade('s', { pinKey: 'k1', templateHash: 'h2' })).to.equal(false);
    // unchanged: taken up under the key; then an edit that keeps the key (h2, k1) keeps the pin
    expect(await pins.upgrade('s', { pinKey: 'k1', templateHash: 'h1' })).to.equal(true);
    expect(await pins.upgrade('s', { pinKey: 'k1', templateHash: 'h1' })).to.equal(false);
    const again = new ImagePins(dir, 'i').loadAll().get('s');
    expect(again).to.deep.equal({ ...old, pinKey: 'k1' });
    expect(pinOf(again, { pinKey: 'k1', templateHash: 'h2' }, 'img:1')?.id).to.equal(A);
    expect(pinOf(again, { pinKey: 'k2', templateHash: 'h1' }, 'img:1')).to.equal(undefined);
  });
});
