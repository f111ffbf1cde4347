/** The status records' index (issue 55): used only while the folder is the one it was made from. */
import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { keptChildNames, StatusStore } from '../../../src/status/store';
import { status } from '../../support/builders';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('status: the records index', function () {
  let state: string;
  let dir: string;
  const opts = { indexMin: 3, racyMs: 20 };
  beforeEach(function () {
    state = mkdtempSync(path.join(os.tmpdir(), 'berth-index-'));
    dir = path.join(state, 'default', 'attempts');
    mkdirSync(dir, { recursive: true });
    const checks = [{ name: 'labels', ok: true, detail: 'as the spec says' }];
    for (const n of ['a', 'b', 'c', 'd'])
      writeFileSync(
        path.join(dir, `${n}.json`),
        JSON.stringify(status(n, { lastAttestation: { at: '2026-01-01T00:00:00.000Z', depth: 'inspect', ok: true, checks } })),
      );
    writeFileSync(path.join(dir, 'e.json'), '{"broken');
  });
  afterEach(() => rmSync(state, { recursive: true, force: true }));

  it('a read of a still folder keeps one; the next reads come from it, records and damaged ones alike, as the folder gave them', async function () {
    await sleep(40);
    const first = new StatusStore(state, 'default', opts);
    const fromFolder = await first.loadAll();
    const index = path.join(state, 'default', 'attempts.index.json');
    expect(existsSync(index)).to.equal(true);
    // the checks are kept once however many records carry them
    expect(readFileSync(index, 'utf8').match(/as the spec says/g)).to.have.length(1);
    // a record changed in place (not the store's way: the folder's times stay) shows the index was read
    writeFileSync(path.join(dir, 'a.json'), JSON.stringify(status('a', { phase: 'Failed' })));
    const second = new StatusStore(state, 'default', opts);
    const fromIndex = await second.loadAll();
    expect(fromIndex.get('a')?.phase).to.equal('Running');
    expect([...fromIndex.entries()]).to.deep.equal([...fromFolder.entries()]);
    expect([...second.damaged().keys()]).to.deep.equal(['e']);
    expect(second.damagedRecordOf('e')?.problem).to.match(/not valid JSON/);
  });

  it('a record with text beyond ASCII reads from the index as it was written', async function () {
    writeFileSync(path.join(dir, 'b.json'), JSON.stringify(status('b', { message: 'café: über 10 µs ✓' })));
    await sleep(40);
    const fromFolder = await new StatusStore(state, 'default', opts).loadAll();
    expect(existsSync(path.join(state, 'default', 'attempts.index.json'))).to.equal(true);
    writeFileSync(path.join(dir, 'a.json'), JSON.stringify(status('a', { phase: 'Failed' })));
    const fromIndex = await new StatusStore(state, 'default', opts).loadAll();
    expect(fromIndex.get('a')?.phase).to.equal('Running');
    expect(fromIndex.get('b')?.message).to.equal('café: über 10 µs ✓');
    expect([...fromIndex.entries()]).to.deep.equal([...fromFolder.entries()]);
  });

  it("the old-form child names are kept beside the index, and read from there only while the folder's stamp holds", async function () {
    const legacy = 'set--0123456789abcdef';
    writeFileSync(path.join(dir, `${legacy}.json`), JSON.stringify(status(legacy)));
    await sleep(40);
    await new StatusStore(state, 'default', opts).loadAll();
    const names = path.join(state, 'default', 'attempts.names.json');
    expect(JSON.parse(readFileSync(names, 'utf8')).legacy).to.deep.equal([legacy]);
    expect([...keptChildNames(state, 'default')]).to.deep.equal([legacy]);
    // the file says so: one name it holds that the folder has not shows it was read
    const kept = JSON.parse(readFileSync(names, 'utf8'));
    writeFileSync(names, JSON.stringify({ ...kept, legacy: [legacy, 'other--fedcba9876543210'] }));
    expect([...keptChildNames(state, 'default')]).to.deep.equal([legacy, 'other--fedcba9876543210']);
    // a file added changes the folder's stamp: the folder is listed again
    const added = 'set--00000000000000aa';
    writeFileSync(path.join(dir, `${added}.json`), JSON.stringify(status(added)));
    expect([...keptChildNames(state, 'default')].sort()).to.deep.equal([added, legacy]);
  });

  it('any write of the store, a file added or removed, or a folder put in its place, and it is not used', async function () {
    await sleep(40);
    await new StatusStore(state, 'default', opts).loadAll();
    const index = path.join(state, 'default', 'attempts.index.json');
    const stale = readFileSync(index);
    // the store's own write (a temp file renamed into the folder)
    const w = new StatusStore(state, 'default', opts);
    await w.put(status('b', { phase: 'Succeeded' }));
    expect((await new StatusStore(state, 'default', opts).get('b'))?.phase).to.equal('Succeeded');
    // a new file, a file gone
    writeFileSync(index, stale);
    writeFileSync(path.join(dir, 'f.json'), JSON.stringify(status('f')));
    rmSync(path.join(dir, 'c.json'));
    const after = await new StatusStore(state, 'default', opts).loadAll();
    expect([after.has('f'), after.has('c')]).to.deep.equal([true, false]);
    // the folder replaced by another with the same files
    writeFileSync(index, stale);
    const other = path.join(state, 'default', 'other');
    mkdirSync(other);
    for (const f of ['a', 'b', 'd']) writeFileSync(path.join(other, `${f}.json`), JSON.stringify(status(f, { phase: 'Blocked' })));
    rmSync(dir, { recursive: true });
    renameSync(other, dir);
    expect((await new StatusStore(state, 'default', opts).get('a'))?.phase).to.equal('Blocked');
  });

  it('none is kept for a folder that changed just before the read, nor for a small one', async function () {
    await new StatusStore(state, 'default', { indexMin: 3, racyMs: 60_000 }).loadAll();
    expect(existsSync(path.join(state, 'default', 'attempts.index.json'))).to.equal(false);
    await sleep(40);
    await new StatusStore(state, 'default', { racyMs: 20 }).loadAll();
    expect(existsSync(path.join(state, 'default', 'attempts.index.json'))).to.equal(false);
  });
});
