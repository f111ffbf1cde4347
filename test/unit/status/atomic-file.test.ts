/** writeFileAtomic / readJsonFile on a real temp folder: content, mode, cleanup, concurrent writers. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CorruptJsonError, readJsonFile, writeFileAtomic } from '../../../src/status/atomic-file';

describe('status/atomic-file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-atomic-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('writes strings and buffers, replacing what was there, leaving no temp file', async () => {
    const file = path.join(dir, 'status.json');
    await writeFileAtomic(file, 'first\n');
    expect(await fs.readFile(file, 'utf8')).to.equal('first\n');
    const bytes = Buffer.from([0, 1, 2, 255, 10]);
    await writeFileAtomic(file, bytes);
    expect(await fs.readFile(file)).to.deep.equal(bytes);
    expect(await fs.readdir(dir)).to.deep.equal(['status.json']);
  });

  it('applies the requested mode exactly, whatever the umask', async function () {
    if (process.platform === 'win32') this.skip();
    const file = path.join(dir, 'secret');
    await writeFileAtomic(file, 'x', { mode: 0o600 });
    expect((await fs.stat(file)).mode & 0o777).to.equal(0o600);
    await writeFileAtomic(file, 'y', { mode: 0o640 });
    expect((await fs.stat(file)).mode & 0o777).to.equal(0o640);
  });

  it('removes its temp file and leaves the target alone when the rename fails', async () => {
    const target = path.join(dir, 'occupied');
    await fs.mkdir(path.join(target, 'child'), { recursive: true }); // a non-empty folder cannot be renamed over
    await writeFileAtomic(target, 'data').then(
      () => expect.fail('should fail'),
      (err: NodeJS.ErrnoException) => expect(err.code).to.be.oneOf(['EISDIR', 'ENOTEMPTY', 'EEXIST', 'EPERM']),
    );
    expect(await fs.readdir(dir)).to.deep.equal(['occupied']);
    expect(await fs.readdir(target)).to.deep.equal(['child']);
  });

  it('fails cleanly when the folder does not exist', async () => {
    const file = path.join(dir, 'missing', 'f.json');
    await writeFileAtomic(file, '{}').then(
      () => expect.fail('should fail'),
      (err: NodeJS.ErrnoException) => expect(err.code).to.equal('ENOENT'),
    );
    expect(await fs.readdir(dir)).to.deep.equal([]);
  });

  it('concurrent writers of one path leave exactly one intact content and no temp files', async () => {
    const file = path.join(dir, 'race.json');
    const contents = Array.from({ length: 24 }, (_, i) => JSON.stringify({ writer: i, pad: String(i % 10).repeat(200_000 + i) }));
    await Promise.all(contents.map((c) => writeFileAtomic(file, c)));
    const final = await fs.readFile(file, 'utf8');
    expect(contents).to.include(final);
    expect(await fs.readdir(dir)).to.deep.equal(['race.json']);
  });

  it('a reader racing the writers never sees a torn file', async () => {
    const file = path.join(dir, 'torn.json');
    await writeFileAtomic(file, JSON.stringify({ n: -1, pad: 'x'.repeat(100_000) }));
    let stop = false;
    let reads = 0;
    const reader = (async () => {
      while (!stop) {
        const v = await readJsonFile<{ n: number; pad: string }>(file);
        expect(v?.pad).to.have.length(100_000);
        reads++;
      }
    })();
    for (let n = 0; n < 30; n++) await writeFileAtomic(file, JSON.stringify({ n, pad: 'y'.repeat(100_000) }));
    stop = true;
    await reader;
    expect(reads).to.be.greaterThan(0);
  });

  describe('readJsonFile', () => {
    it('parses a file, and gives undefined when it or its folder is missing', async () => {
      const file = path.join(dir, 'ok.json');
      await writeFileAtomic(file, '{"phase":"Running","n":[1,2]}');
      expect(await readJsonFile<{ phase: string }>(file)).to.deep.equal({ phase: 'Running', n: [1, 2] });
      expect(await readJsonFile(path.join(dir, 'nope.json'))).to.equal(undefined);
      expect(await readJsonFile(path.join(dir, 'no', 'such.json'))).to.equal(undefined);
    });

    it('names the file when the JSON is corrupt or empty', async () => {
      const file = path.join(dir, 'bad.json');
      await fs.writeFile(file, '{"phase": Runn');
      const err = await readJsonFile(file).then(
        () => expect.fail('should throw'),
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(CorruptJsonError);
      expect((err as CorruptJsonError).code).to.equal('CorruptJson');
      expect((err as CorruptJsonError).file).to.equal(file);
      expect((err as Error).message)
        .to.contain(file)
        .and.to.contain('not valid JSON');
      await fs.writeFile(file, '  \n');
      await readJsonFile(file).then(
        () => expect.fail('should throw'),
        (e: Error) => expect(e.message).to.contain(file).and.to.contain('empty file'),
      );
    });

    it('says what is wrong without quoting the file: empty, binary, truncated, or where the syntax breaks', async () => {
      const file = path.join(dir, 'bad.json');
      const secret = 'hunter2-SECRET';
      const cases: [string | Buffer, string][] = [
        [`${secret}{{{`, 'syntax error'],
        [`{"a": 1,\n "${secret}": tru`, 'truncated: ends inside the JSON after 31 bytes'],
        [`{"a": "${secret}`, 'truncated: ends inside the JSON after 21 bytes'],
        [`{"a": 1}\n}${secret}`, 'syntax error at line 2, column 1'],
        [Buffer.from([0xff, 0xfe, 0x00, ...Buffer.from(secret)]), 'binary content, not text'],
        [`\u001b[2J${secret}`, 'binary content, not text'],
      ];
      for (const [content, detail] of cases) {
        await fs.writeFile(file, content);
        const err = (await readJsonFile(file).then(
          () => expect.fail('should throw'),
          (e: unknown) => e,
        )) as CorruptJsonError;
        expect(err.detail, String(content)).to.equal(detail);
        expect(err.message).not.to.contain(secret).and.not.to.contain('hunter');
      }
    });

    it('passes other read errors through', async () => {
      await readJsonFile(dir).then(
        () => expect.fail('reading a folder should throw'),
        (e: NodeJS.ErrnoException) => expect(e.code).to.equal('EISDIR'),
      );
    });
  });
});
