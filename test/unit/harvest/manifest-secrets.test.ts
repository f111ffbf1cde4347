/** The manifest flags the results files that hold a secret's value (scanned in the read that hashes them), and says what it could not scan. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeManifest, type HashBudget, type Manifest } from '../../../src/harvest/manifest';
import { Redactor } from '../../../src/util/redact';

const KEY = 'sk-live-0123456789abcdefghij';

/** The manifest of `root` as the harvest writes it (streamed into a file), read back. */
async function manifest(root: string, hash?: HashBudget, _signal?: AbortSignal, redactor?: Redactor): Promise<Manifest> {
  const out = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-manifest-out-'));
  try {
    const h = await fs.open(path.join(out, 'manifest.json'), 'w');
    try {
      await writeManifest(root, h, { ...(hash ? { hash } : {}), ...(redactor ? { redactor } : {}) });
    } finally {
      await h.close();
    }
    return JSON.parse(await fs.readFile(path.join(out, 'manifest.json'), 'utf8')) as Manifest;
  } finally {
    await fs.rm(out, { recursive: true, force: true });
  }
}

describe('harvest/manifest: files holding a secret', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-manifest-secrets-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('flags each file by the secrets it holds, also across the 1 MiB read boundary and base64-encoded; keeps the files and their sha256', async () => {
    const straddle = Buffer.concat([Buffer.alloc(1024 * 1024 - 10, 'a'), Buffer.from(KEY), Buffer.from('tail')]);
    await fs.writeFile(path.join(dir, 'straddle.bin'), straddle);
    await fs.mkdir(path.join(dir, 'sub'));
    await fs.writeFile(path.join(dir, 'sub', 'b64.txt'), Buffer.from(`x${KEY}`).toString('base64'));
    await fs.writeFile(path.join(dir, 'clean.txt'), 'nothing here\n');
    await fs.symlink('/etc/passwd', path.join(dir, 'link'));
    const r = new Redactor([{ name: 'api', value: Buffer.from(KEY) }], 4);
    const m = await manifest(dir, { maxBytes: 1e12, maxSeconds: 60 }, undefined, r);
    const by = Object.fromEntries(m.files.map((f) => [f.path, f]));
    expect(by['straddle.bin']?.secrets).to.deep.equal(['api']);
    expect(by['straddle.bin']?.sha256).to.equal(createHash('sha256').update(straddle).digest('hex'));
    expect(by['sub/b64.txt']?.secrets).to.deep.equal(['api']);
    expect(by['clean.txt']?.secrets).to.equal(undefined);
    expect(by['link']?.secrets).to.equal(undefined);
    expect(m.secretScan).to.deep.equal({ secrets: ['api'], filesWithSecrets: 2, unscannedFiles: 0 });
    expect((await fs.readFile(path.join(dir, 'straddle.bin'))).equals(straddle)).to.equal(true);
  });

  it('counts the files left unhashed by the budget as not scanned; without a redactor there is no secretScan', async () => {
    await fs.writeFile(path.join(dir, 'big.txt'), `${KEY}${'x'.repeat(100)}`);
    await fs.writeFile(path.join(dir, 'small.txt'), KEY);
    const m = await manifest(dir, { maxBytes: KEY.length, maxSeconds: 60 }, undefined, new Redactor([{ name: 'api', value: Buffer.from(KEY) }], 4));
    expect(m.secretScan).to.deep.equal({ secrets: ['api'], filesWithSecrets: 1, unscannedFiles: 1 });
    expect((await manifest(dir)).secretScan).to.equal(undefined);
  });
});
