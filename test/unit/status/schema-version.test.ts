/** Status records carry a schemaVersion: an older record is upgraded on read, a newer one refused (never taken for damage). */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SCHEMA_VERSIONS } from '../../../src/constants';
import { StatusStore } from '../../../src/status/store';
import { NewerRecordError } from '../../../src/status/validate';
import { status } from '../../support/builders';

describe('status records: schemaVersion', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-schema-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string) => path.join(dir, 'i', 'attempts', `${name}.json`);
  const write = (name: string, rec: object) => {
    mkdirSync(path.dirname(file(name)), { recursive: true });
    writeFileSync(file(name), JSON.stringify(rec));
  };

  it('a record is written with the version; one written before records had one is read as the current one, and so written back', async () => {
    const store = new StatusStore(dir, 'i');
    await store.put(status('a', { instance: 'i' }));
    expect((JSON.parse(readFileSync(file('a'), 'utf8')) as { schemaVersion: number }).schemaVersion).to.equal(SCHEMA_VERSIONS.statusRecord);
    const { schemaVersion: _v, ...old } = status('b', { instance: 'i' });
    write('b', old);
    const fresh = new StatusStore(dir, 'i');
    expect((await fresh.get('b'))?.schemaVersion).to.equal(SCHEMA_VERSIONS.statusRecord);
    expect(fresh.damaged().size).to.equal(0);
  });

  it('a record of a newer berth stops the command with a clear message; it is neither set aside nor overwritten', async () => {
    write('c', { ...status('c', { instance: 'i' }), schemaVersion: SCHEMA_VERSIONS.statusRecord + 1, somethingNew: { x: 1 }, phase: 'Rehydrating' });
    const before = readFileSync(file('c'), 'utf8');
    const store = new StatusStore(dir, 'i');
    const err = await store.loadAll().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(NewerRecordError);
    expect((err as Error).message).to.match(/written by a newer berth \(schema version 3; this berth reads up to 2\): use that berth or a newer one/);
    await store.recover().catch(() => undefined);
    expect(readFileSync(file('c'), 'utf8')).to.equal(before);
    expect(existsSync(path.join(dir, 'i', 'damaged'))).to.equal(false);
  });
});
