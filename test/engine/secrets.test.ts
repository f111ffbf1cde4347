/** Secrets on the real engine: files at /run/secrets, byte-exact, 0400, and nowhere else. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { requireEngine, docker } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const FILE_SECRET = Buffer.concat([Buffer.from('line1=a\nline2==b\r\n'), Buffer.from([0, 1, 2, 255, 254, 10])]);
const ENV_SECRET = 'env-s3cr3t-value=with=equals\nand a newline';
const ENV_VAR = 'BERTH_TEST_SECRET_VALUE';

async function grepTree(root: string, needle: string, skip: (p: string) => boolean): Promise<string[]> {
  const hits: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fs.readdir(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (skip(p)) continue;
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && (await fs.readFile(p)).includes(needle)) hits.push(p);
    }
  };
  await walk(root);
  return hits;
}

describe('secrets (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('sec');
  });
  after(async function () {
    await sb.destroy();
  });

  it('delivers secrets as byte-exact 0400 files and keeps them out of inspect, logs, status and plans', async function () {
    await sb.write('secrets/blob', FILE_SECRET);
    await sb.write(
      'a.yaml',
      sb.attempt(
        'a',
        'cd /run/secrets; sha256sum blob token > /results/sums; stat -c "%a %u %n" blob token > /results/modes; echo done; sleep 300',
        `  secrets:\n    - {name: blob, fromFile: ./secrets/blob}\n    - {name: token, fromEnv: ${ENV_VAR}}\n`,
      ),
    );
    process.env[ENV_VAR] = ENV_SECRET;
    try {
      const plan = await sb.cli('plan', '-o', 'json');
      expect(plan.stdout).to.not.include(ENV_SECRET.slice(0, 10));
      const r = await sb.cli('reconcile', '--once', '--log-level', 'debug');
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stderr + r.stdout).to.not.include(ENV_SECRET.slice(0, 10));
      // wait until the attempt has written its checks (it prints "done", then sleeps)
      const id = (await sb.status('a'))?.containerId ?? '';
      const logs = (await docker.getContainer(id).logs({ follow: true, stdout: true, stderr: true })) as unknown as NodeJS.ReadableStream;
      for await (const chunk of logs) if (String(chunk).includes('done')) break;
      const sums = await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'sums'), 'utf8');
      const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
      expect(sums).to.include(`${sha(FILE_SECRET)}  blob`);
      expect(sums).to.include(`${sha(ENV_SECRET)}  token`);
      expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'modes'), 'utf8')).to.equal('400 0 blob\n400 0 token\n');
      const inspect = JSON.stringify(await docker.getContainer(id).inspect());
      expect(inspect).to.not.include(ENV_SECRET.slice(0, 10));
      expect(inspect).to.not.include('line2==b');
      // stop it so it finishes and harvests; then nothing berth wrote holds the value
      await docker.getContainer(id).kill();
      const done = await sb.cli('reconcile', '--once', '--wait');
      expect(done.code).to.equal(3); // killed: Failed
      const attemptOwn = path.join(sb.resultsRoot, 'a', 'run-1', 'results');
      expect(await grepTree(sb.stateDir, ENV_SECRET.slice(0, 10), () => false)).to.deep.equal([]);
      expect(await grepTree(sb.resultsRoot, ENV_SECRET.slice(0, 10), (p) => p === attemptOwn)).to.deep.equal([]);
      expect(await grepTree(sb.resultsRoot, 'line2==b', (p) => p === attemptOwn)).to.deep.equal([]);
      const d = await sb.cli('describe', 'a');
      expect(d.stdout).to.include('token (env');
      expect(d.stdout).to.not.include(ENV_SECRET.slice(0, 10));
    } finally {
      delete process.env[ENV_VAR];
    }
  });

  it('names the spec and the secret, never a value, when a source is missing; and warns on an env opt-in', async function () {
    await sb.write('b.yaml', sb.attempt('b', 'true', `  secrets:\n    - {name: key, fromEnv: BERTH_TEST_UNSET_VAR}\n`));
    const r = await sb.cli('reconcile', '--once');
    const st = await sb.status('b');
    expect(st?.phase).to.equal('Blocked');
    expect(st?.message).to.equal("secret key: environment variable BERTH_TEST_UNSET_VAR is not set in berth's environment");
    expect(r.code).to.equal(0);

    process.env[ENV_VAR] = ENV_SECRET;
    try {
      await sb.write(
        'c.yaml',
        sb.attempt(
          'c',
          'test "$TOKEN" = "$(cat /run/secrets/token)"',
          `  secrets:\n    - {name: token, fromEnv: ${ENV_VAR}}\n  env: {TOKEN: {secretRef: token}}\n`,
        ),
      );
      const w = await sb.cli('reconcile', '--once', '--wait');
      expect((await sb.status('c'))?.phase, w.stderr).to.equal('Succeeded');
      const d = await sb.cli('describe', 'c');
      expect(d.stdout).to.match(/WARNING: .*secret token is exposed as environment variable TOKEN/);
    } finally {
      delete process.env[ENV_VAR];
    }
  });
});
