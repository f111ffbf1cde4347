/** status/store on a real temp folder: damaged records isolated, set aside by writers only; temp files of interrupted writes. */
import { SCHEMA_VERSIONS } from '../../../src/constants';
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StateFolderError } from '../../../src/status/damaged';
import { StatusStore } from '../../../src/status/store';
import type { AttemptStatus } from '../../../src/status/types';
import { status } from '../../support/builders';

const I = 'inst';
const MARKER = 'SECRET-MARKER-7f3a';

function rec(name: string, over: Partial<AttemptStatus> = {}): AttemptStatus {
  return status(name, { instance: I, ...over });
}

describe('status/store', () => {
  let dir: string;
  let warnings: string[];
  const store = () => new StatusStore(dir, I, { warn: (m) => warnings.push(m) });
  const attempts = () => path.join(dir, I, 'attempts');
  const write = (name: string, content: string | Buffer) => fs.writeFile(path.join(attempts(), `${name}.json`), content);

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-store-'));
    warnings = [];
    await store().put(rec('good'));
    await write('garbage', `\u0000\u0001${MARKER}{{{`);
    await write('truncated', JSON.stringify(rec('truncated', { message: MARKER }), null, 2).slice(0, 120));
    await write('syntax', `{"name": "syntax", ${MARKER}}`);
    await write('shape', JSON.stringify([MARKER]));
    await write('renamed', JSON.stringify(rec(MARKER)));
    await write('elsewhere', JSON.stringify(rec('elsewhere', { instance: 'other' })));
    await write('nophase', JSON.stringify(rec('nophase', { phase: MARKER as never })));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  const DAMAGED = ['elsewhere', 'garbage', 'nophase', 'renamed', 'shape', 'syntax', 'truncated'];

  it('reads damaged records as missing, reports each once by file and problem, never quoting it, and moves nothing', async () => {
    const s = store();
    const all = await s.loadAll();
    expect([...all.keys()]).to.deep.equal(['good']);
    expect([...s.damaged().keys()].sort()).to.deep.equal(DAMAGED);
    const problems = Object.fromEntries([...s.damaged().values()].map((d) => [d.name, d.problem]));
    expect(problems).to.deep.equal({
      elsewhere: 'its instance field does not name instance inst',
      garbage: 'not valid JSON (binary content, not text)',
      nophase: 'field phase is missing or not a known phase',
      renamed: 'its name field does not match the file name',
      shape: 'not a status record (not a JSON object)',
      syntax: 'not valid JSON (syntax error at line 1, column 20)',
      truncated: 'not valid JSON (truncated: ends inside the JSON after 120 bytes)',
    });
    expect(warnings).to.have.length(DAMAGED.length);
    for (const name of DAMAGED) expect(warnings.some((w) => w.startsWith(path.join(attempts(), `${name}.json`)))).to.equal(true);
    expect(warnings.join('\n')).not.to.contain(MARKER);
    s.invalidate();
    await s.loadAll();
    expect(warnings, 'reported once per store').to.have.length(DAMAGED.length);
    expect((await fs.readdir(attempts())).sort()).to.deep.equal([...DAMAGED, 'good'].map((n) => `${n}.json`).sort());
  });

  it('a writer sets damaged records aside with their bytes, and the rebuilt record says so', async () => {
    const before = await fs.readFile(path.join(attempts(), 'garbage.json'));
    const s = store();
    await s.loadAll();
    await s.put(rec('good', { phase: 'Succeeded' }));
    expect((await fs.readdir(attempts())).sort()).to.deep.equal(['good.json']);
    const kept = await fs.readdir(path.join(dir, I, 'damaged'));
    expect(kept.map((k) => k.replace(/\.json\..*$/, '')).sort()).to.deep.equal(DAMAGED);
    const garbage = kept.find((k) => k.startsWith('garbage.json.')) ?? '';
    expect(await fs.readFile(path.join(dir, I, 'damaged', garbage))).to.deep.equal(before);
    expect(s.damaged().get('garbage')?.keptAt).to.equal(path.join(dir, I, 'damaged', garbage));
    expect(warnings.filter((w) => w.includes('set aside as'))).to.have.length(DAMAGED.length);
    expect(warnings.join('\n')).not.to.contain(MARKER);

    await s.put(rec('garbage', { phase: 'Running' }));
    const rebuilt = JSON.parse(await fs.readFile(path.join(attempts(), 'garbage.json'), 'utf8')) as AttemptStatus;
    expect(rebuilt.warnings).to.have.length(1);
    expect(rebuilt.warnings?.[0]).to.match(
      /status record rebuilt from the engine: the earlier one was damaged \(not valid JSON \(binary content, not text\)\) and is kept at .*damaged\/garbage\.json\./,
    );
    expect(s.damaged().has('garbage')).to.equal(false);
    await s.put(rec('garbage', { phase: 'Succeeded', warnings: rebuilt.warnings ?? [] }));
    expect((await s.get('garbage'))?.warnings, 'said once').to.have.length(1);
    // A fresh store finds nothing damaged any more.
    const fresh = store();
    expect([...(await fresh.loadAll()).keys()].sort()).to.deep.equal(['garbage', 'good']);
    expect(fresh.damaged().size).to.equal(0);
  });

  it('a record damaged and then repaired before the writer starts is left where it is', async () => {
    const s = store();
    await s.loadAll();
    await write('truncated', JSON.stringify(rec('truncated')));
    await s.recover();
    expect(await fs.readdir(attempts())).to.include('truncated.json');
    expect(s.damaged().has('truncated')).to.equal(false);
  });

  it("a writer removes temp files of interrupted writes: a dead writer's, and any old one; a live writer's fresh one stays", async () => {
    const dead = `.good.json.2147483646.${'a'.repeat(12)}.tmp`;
    const liveFresh = `.good.json.${process.ppid}.${'b'.repeat(12)}.tmp`;
    const liveOld = `.good.json.${process.ppid}.${'c'.repeat(12)}.tmp`;
    const notOurs = '.good.json.tmp';
    for (const n of [dead, liveFresh, liveOld, notOurs]) await fs.writeFile(path.join(attempts(), n), '{"partial":');
    const old = new Date(Date.now() - 11 * 60_000);
    await fs.utimes(path.join(attempts(), liveOld), old, old);
    const s = store();
    await s.loadAll();
    expect(await fs.readdir(attempts()), 'readers remove nothing').to.include.members([dead, liveFresh, liveOld]);
    await s.recover();
    const left = await fs.readdir(attempts());
    expect(left).to.include.members([liveFresh, notOurs]);
    expect(left).not.to.include.members([dead]);
    expect(left).not.to.include.members([liveOld]);
  });

  it("a read while another is under way (a pass beside the writer's recovery) shares it: one read, one report", async () => {
    const s = store();
    const [a, b] = await Promise.all([s.loadAll(), s.recover().then(() => s.loadAll())]);
    expect(a).to.equal(b);
    expect([...a.keys()]).to.deep.equal(['good']);
    // Each damaged record reported once, and set aside by the recovery all the same.
    expect(warnings.filter((w) => w.includes('is read as if it had no record'))).to.have.length(DAMAGED.length);
    expect(warnings.filter((w) => w.includes(') set aside as '))).to.have.length(DAMAGED.length);
    expect((await fs.readdir(path.join(dir, I, 'damaged'))).length).to.equal(DAMAGED.length);
  });

  it('invalidate() during a read: the next read comes from disk again', async () => {
    const s = store();
    const first = s.loadAll();
    s.invalidate();
    await s.put(rec('later'));
    const again = await s.loadAll();
    expect(again.has('later')).to.equal(true);
    expect((await first).has('good')).to.equal(true);
  });

  it('a missing state folder is an empty store, and recovery there is a no-op', async () => {
    const s = new StatusStore(path.join(dir, 'nope'), I);
    expect((await s.loadAll()).size).to.equal(0);
    await s.recover();
    await fs.access(path.join(dir, 'nope')).then(
      () => expect.fail('recovery made the folder'),
      () => undefined,
    );
  });

  it('records sharing strings (checks, engine boot) read back exactly as written, odd shapes kept as they are, compact or not', async () => {
    const checks = ['labels', 'image'].map((c) => ({ name: c, ok: true, detail: `${c} as the spec says` }));
    const written: Record<string, unknown> = {};
    for (let i = 0; i < 5; i++) {
      const r = rec(`share${i}`, {
        phase: 'Succeeded',
        reason: 'Completed',
        engineBoot: { id: 'b'.repeat(64), at: '2026-01-01T00:00:00.000Z' },
        lastAttestation: { at: '2026-01-01T00:00:01.000Z', depth: 'inspect', ok: true, checks: checks.map((c) => ({ ...c })) },
      });
      written[r.name] = r;
      await write(r.name, JSON.stringify(r));
    }
    // an engine boot that is not one, and a check without a detail: read as they are
    const odd = {
      ...rec('odd'),
      engineBoot: 'not-an-object',
      lastAttestation: { at: '2026-01-01T00:00:01.000Z', depth: 'list', ok: false, checks: [{ name: 7 }, { name: 'labels', ok: false }] },
    };
    written.odd = odd;
    await write('odd', JSON.stringify(odd));
    // a compact store (the controller's: one copy of each repeated string) and a plain one read the same
    const compact = new StatusStore(dir, I, { compact: true, warn: () => undefined });
    for (const all of [await compact.loadAll(), await store().loadAll()]) {
      // as written, with the schema version a record without one is read at (SCHEMA_VERSIONS.statusRecord)
      for (const [n, w] of Object.entries(written))
        expect(all.get(n), n).to.deep.equal(JSON.parse(JSON.stringify({ ...(w as object), schemaVersion: SCHEMA_VERSIONS.statusRecord })));
    }
    expect([...compact.damaged().keys()].sort()).to.deep.equal(DAMAGED);
  });

  it('a compact store keeps one frozen copy of a check list many records repeat, and its own of one that differs; a record written again keeps its own', async () => {
    const checks = (detail: string) => ['labels', 'image', 'dns'].map((c) => ({ name: c, ok: true, detail: `${c} ${detail}` }));
    const attested = (name: string, detail: string) =>
      rec(name, { phase: 'Succeeded', lastAttestation: { at: '2026-01-01T00:00:01.000Z', depth: 'inspect', ok: true, checks: checks(detail) } });
    for (const [n, d] of [
      ['same1', 'as the spec says'],
      ['same2', 'as the spec says'],
      ['same3', 'as the spec says'],
      ['other', 'not as the spec says'],
    ] as const)
      await write(n, JSON.stringify(attested(n, d)));
    const compact = new StatusStore(dir, I, { compact: true, warn: () => undefined });
    const all = await compact.loadAll();
    const list = (n: string) => all.get(n)?.lastAttestation?.checks;
    expect(list('same1')).to.deep.equal(checks('as the spec says'));
    expect(list('same2')).to.equal(list('same1'));
    expect(list('same3')).to.equal(list('same1'));
    expect(list('other')).to.deep.equal(checks('not as the spec says'));
    expect(list('other')).to.not.equal(list('same1'));
    expect(Object.isFrozen(list('same1')) && list('same1')?.every((c) => Object.isFrozen(c))).to.equal(true);
    // a list of another shape (a check with a field more) is read as it is, not shared
    const extra = (n: string) =>
      rec(n, {
        lastAttestation: { at: '2026-01-01T00:00:01.000Z', depth: 'list', ok: true, checks: [{ name: 'a', ok: true, detail: 'd', more: 1 } as never] },
      });
    await compact.put(extra('extra1'));
    await compact.put(extra('extra2'));
    const again = await new StatusStore(dir, I, { compact: true, warn: () => undefined }).loadAll();
    expect(again.get('extra1')?.lastAttestation?.checks).to.deep.equal([{ name: 'a', ok: true, detail: 'd', more: 1 }]);
    expect(again.get('extra2')?.lastAttestation?.checks).to.not.equal(again.get('extra1')?.lastAttestation?.checks);
    // a plain store (a command's) shares nothing
    const plain = await store().loadAll();
    expect(plain.get('same2')?.lastAttestation?.checks).to.not.equal(plain.get('same1')?.lastAttestation?.checks);
    // a record written again with other checks: its own, the others' unchanged
    await compact.put(attested('same2', 'changed'));
    expect((await compact.get('same2'))?.lastAttestation?.checks).to.deep.equal(checks('changed'));
    expect(list('same1')).to.deep.equal(checks('as the spec says'));
    expect((await compact.get('same3'))?.lastAttestation?.checks).to.equal(list('same1'));
  });

  describe('the records folder replaced', () => {
    const damagedDir = () => path.join(dir, I, 'damaged');

    for (const kind of ['a file', 'a link to nothing'] as const) {
      it(`by ${kind}: readers read no records, say so once naming the path and what to run, and move nothing`, async () => {
        await fs.rm(attempts(), { recursive: true });
        if (kind === 'a file') await fs.writeFile(attempts(), MARKER);
        else await fs.symlink(path.join(dir, 'nowhere'), attempts());
        const s = store();
        expect((await s.loadAll()).size).to.equal(0);
        s.invalidate();
        expect((await s.loadAll()).size).to.equal(0);
        expect(warnings).to.have.length(1);
        expect(warnings[0])
          .to.contain(
            `${attempts()}: the status records folder is damaged (${kind === 'a file' ? 'a file, not a folder' : `a link to nothing (${path.join(dir, 'nowhere')})`})`,
          )
          .and.to.contain('`berth reconcile --once`')
          .and.not.to.contain(MARKER);
        expect(s.damagedFolder()).to.include({ file: attempts() });
        expect(s.damagedRecordOf('good')).to.deep.include({ name: 'good', file: attempts() });
        expect(s.damagedRecordOf('good')?.problem).to.match(/^the status records folder is a (file|link)/);
        expect((await fs.lstat(attempts())).isDirectory()).to.equal(false);
        await fs.access(damagedDir()).then(
          () => expect.fail('a reader made the damaged folder'),
          () => undefined,
        );
      });
    }

    it('a writer sets the file aside as damaged/attempts.<time>, byte for byte, and writes into a new folder', async () => {
      await fs.rm(attempts(), { recursive: true });
      await fs.writeFile(attempts(), MARKER);
      const s = store();
      await s.recover();
      const kept = await fs.readdir(damagedDir());
      expect(kept).to.have.length(1);
      expect(kept[0]).to.match(/^attempts\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z$/);
      expect(await fs.readFile(path.join(damagedDir(), kept[0] as string), 'utf8')).to.equal(MARKER);
      expect(s.damagedFolder()?.keptAt).to.equal(path.join(damagedDir(), kept[0] as string));
      expect(warnings.some((w) => w.includes(`set aside as ${path.join(damagedDir(), kept[0] as string)}`))).to.equal(true);
      await s.put(rec('a'));
      expect(await fs.readdir(attempts())).to.deep.equal(['a.json']);
      expect((await store().get('a'))?.name).to.equal('a');
    });

    it('replaced under a running writer: its next write sets it aside and writes back every record it holds', async () => {
      const s = store();
      await s.recover();
      await s.put(rec('a'));
      await fs.rm(attempts(), { recursive: true });
      await fs.writeFile(attempts(), MARKER);
      await s.put(rec('b'));
      expect((await fs.readdir(attempts())).sort()).to.deep.equal(['a.json', 'b.json', 'good.json']);
      expect(await fs.readdir(damagedDir())).to.satisfy((l: string[]) => l.some((n) => n.startsWith('attempts.')));
      const again = await store().loadAll();
      expect([...again.keys()].sort()).to.deep.equal(['a', 'b', 'good']);
    });

    for (const which of ['state folder', 'instance folder'] as const) {
      for (const kind of ['a file', 'a link to nothing'] as const) {
        it(`the ${which} as ${kind}: a clear error naming it, for readers and writers, and nothing moved`, async () => {
          const target = which === 'state folder' ? path.join(dir, 'state') : path.join(dir, I);
          const stateDir = which === 'state folder' ? target : dir;
          await fs.rm(target, { recursive: true, force: true });
          if (kind === 'a file') await fs.writeFile(target, MARKER);
          else await fs.symlink(path.join(dir, 'nowhere'), target);
          const s = new StatusStore(stateDir, I, { warn: (m) => warnings.push(m) });
          for (const call of [() => s.loadAll(), () => s.recover(), () => s.put(rec('a'))]) {
            const err = await call().catch((e: unknown) => e);
            expect(err).to.be.instanceOf(StateFolderError);
            expect((err as Error).message)
              .to.match(new RegExp(`^${target}: the ${which === 'state folder' ? 'state folder' : "folder of this instance's state"} is a (file|link)`))
              .and.to.contain('move it out of the way');
          }
          expect((await fs.lstat(target)).isSymbolicLink() || (await fs.lstat(target)).isFile()).to.equal(true);
        });
      }
    }
  });
});
