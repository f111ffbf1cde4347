/**
 * Images from a real registry (test/support/registry.ts: Debian's docker-registry with TLS and
 * bcrypt htpasswd, on the docker0 gateway): a private image pulled with the credential from
 * config.json `auths`, from a credential helper (a docker-credential-* script of the test's own)
 * and from --registry-config; one pull per image however many attempts need it (the access log
 * counts); the pulled digest recorded; the password in no file berth wrote, no container config,
 * no output. Without a credential: Blocked/ImagePullBackOff, unauthorized, settled by
 * --pull-retries (exit 5).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LABELS, REASONS } from '../../src/constants';
import { docker, requireEngine, TEST_RUN } from '../support/engine';
import { makeTestImage, removeImage, TestRegistry } from '../support/registry';
import { filesHolding } from '../support/files-holding';
import { Sandbox } from '../support/sandbox';

/** Runs `f` with process.env changed as `over` says (undefined: unset), then puts it back. */
async function withEnv<T>(over: Record<string, string | undefined>, f: () => Promise<T>): Promise<T> {
  const was = Object.fromEntries(Object.keys(over).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(over))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  try {
    return await f();
  } finally {
    for (const [k, v] of Object.entries(was))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

const attempt = (name: string, image: string, cmd = 'echo ran') =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${name}}\nspec:\n  image: ${image}\n  command: [sh, -c, '${cmd}']\n---\n`;

describe('images from a registry (real registry, real engine)', function () {
  this.timeout(180_000);
  let reg: TestRegistry;
  let sb: Sandbox;
  let home: string;
  const local = [`berth-test/${TEST_RUN}-pa:1`, `berth-test/${TEST_RUN}-pb:1`];
  let refA: string;
  let refB: string;

  before(async function () {
    await requireEngine();
    reg = await TestRegistry.start();
    for (const l of local) await makeTestImage(l, 512 * 1024);
    refA = await reg.push(local[0] as string, 'evals/pa:1');
    refB = await reg.push(local[1] as string, 'evals/pb:1');
    for (const l of local) await removeImage(l);
  });
  after(async function () {
    for (const r of [refA, refB]) if (r) await removeImage(r);
    for (const l of local) await removeImage(l);
    await reg?.stop();
  });
  beforeEach(async function () {
    sb = await Sandbox.create('pull');
    home = await fs.mkdtemp(path.join(os.tmpdir(), `berth-pullcfg-${TEST_RUN}-`));
    await removeImage(refA);
    await removeImage(refB);
  });
  afterEach(async function () {
    await sb.destroy();
    await fs.rm(home, { recursive: true, force: true });
  });

  async function noPasswordAnywhere(outputs: string[]): Promise<void> {
    const pw = reg.user.password;
    expect(await filesHolding(sb.dir, pw), 'files berth wrote').to.deep.equal([]);
    for (const o of outputs) expect(o.includes(pw), 'command output').to.equal(false);
    const cs = await docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${sb.instance}`] } });
    for (const c of cs) expect(JSON.stringify(await docker.getContainer(c.Id).inspect()).includes(pw), `container ${c.Names[0] ?? ''}`).to.equal(false);
  }

  it('config.json auths: 4 attempts over 2 private images run after one pull per image; the digest is recorded; the password is nowhere', async function () {
    await fs.writeFile(path.join(home, 'config.json'), JSON.stringify({ auths: reg.authEntry() }));
    await sb.write('a.yaml', attempt('a1', refA) + attempt('a2', refA) + attempt('a3', refA) + attempt('b1', refB));
    const blobsBefore = (await reg.requests(/^GET \/v2\/evals\/p[ab]\/blobs\//)).length;
    const r = await withEnv({ DOCKER_CONFIG: home }, () => sb.cli('reconcile', '--once', '--wait', '--timeout', '120', '--max-running', '2'));
    expect(r.code, r.stderr).to.equal(0);
    const recs = await sb.store().loadAll();
    for (const n of ['a1', 'a2', 'a3', 'b1']) expect(recs.get(n)?.phase, n).to.equal('Succeeded');
    // one pull per image: each blob of each image fetched once (the shared busybox layer: once, by the first)
    const blobs = (await reg.requests(/^GET \/v2\/evals\/p[ab]\/blobs\//)).slice(blobsBefore);
    expect(new Set(blobs).size, blobs.join('\n')).to.equal(blobs.length);
    const manifests = await reg.requests(/^(GET|HEAD) \/v2\/evals\/pa\/manifests\//);
    expect(manifests.length).to.be.greaterThan(0);
    const digest = (await docker.getImage(refA).inspect()).RepoDigests?.find((d) => d.startsWith(`${reg.host}/evals/pa@`));
    expect(digest).to.be.a('string');
    expect(recs.get('a1')?.image?.repoDigests).to.include(digest);
    const pulls = JSON.parse(await fs.readFile(path.join(sb.stateDir, sb.instance, 'pulls.json'), 'utf8')) as {
      pulls: Record<string, { pulled?: { digest?: string } }>;
    };
    expect(pulls.pulls[refA]?.pulled?.digest).to.equal(digest?.slice(digest.indexOf('@') + 1));
    await noPasswordAnywhere([r.stdout, r.stderr]);
  });

  it('a credential helper (docker-credential-*, the registry on its stdin) and --registry-config give the credential', async function () {
    const bin = path.join(home, 'bin');
    await fs.mkdir(bin);
    const helper = `berthtest${TEST_RUN.replace(/[^a-z0-9]/g, '')}`;
    // prints the credential only for the registry it is asked about on stdin
    await fs.writeFile(
      path.join(bin, `docker-credential-${helper}`),
      `#!/bin/sh\nread -r server\n[ "$1" = get ] || exit 1\nif [ "$server" = "${reg.host}" ]; then printf '{"ServerURL":"%s","Username":"${reg.user.user}","Secret":"${reg.user.password}"}' "$server"; else echo 'credentials not found in native keychain'; exit 1; fi\n`,
      { mode: 0o755 },
    );
    await fs.writeFile(path.join(home, 'config.json'), JSON.stringify({ credHelpers: { [reg.host]: helper } }));
    await sb.write('a.yaml', attempt('h1', refA));
    const r = await withEnv({ DOCKER_CONFIG: home, PATH: `${bin}:${process.env.PATH ?? ''}` }, () =>
      sb.cli('reconcile', '--once', '--wait', '--timeout', '120'),
    );
    expect(r.code, r.stderr).to.equal(0);
    expect((await sb.status('h1'))?.phase).to.equal('Succeeded');

    const other = path.join(home, 'other.json');
    await fs.writeFile(other, JSON.stringify({ auths: reg.authEntry() }), { mode: 0o600 });
    await sb.write('b.yaml', attempt('f1', refB));
    const r2 = await withEnv({ DOCKER_CONFIG: path.join(home, 'none') }, () =>
      sb.cli('reconcile', '--once', '--wait', '--timeout', '120', '--registry-config', other),
    );
    expect(r2.code, r2.stderr).to.equal(0);
    expect((await sb.status('f1'))?.phase).to.equal('Succeeded');
    await noPasswordAnywhere([r.stdout, r.stderr, r2.stdout, r2.stderr]);
  });

  it('berth images shows what the specs need; berth pull --all brings it (exit 0), without a credential it fails (exit 1)', async function () {
    await sb.write('a.yaml', attempt('i1', refA) + attempt('i2', refA) + attempt('i3', refB));
    const before = JSON.parse((await sb.cli('images', '-o', 'json')).stdout) as {
      images: { ref: string; state: string; attempts: number; broughtByBerth: boolean }[];
    };
    expect(before.images.map((i) => [i.ref, i.state, i.attempts])).to.deep.equal([
      [refA, 'Missing', 2],
      [refB, 'Missing', 1],
    ]);
    const denied = await withEnv({ DOCKER_CONFIG: path.join(home, 'none') }, () => sb.cli('pull', 'i3'));
    expect(denied.code, denied.stderr).to.equal(1);
    expect(denied.stdout).to.contain(`${refB}: failed: unauthorized at ${reg.host}`);
    await fs.writeFile(path.join(home, 'config.json'), JSON.stringify({ auths: reg.authEntry() }));
    const p = await withEnv({ DOCKER_CONFIG: home }, () => sb.cli('pull', '--all'));
    expect(p.code, p.stderr).to.equal(0);
    expect(p.stdout).to.contain(`${refA}: pulled (sha256:`);
    const after = JSON.parse((await sb.cli('images', '-o', 'json')).stdout) as {
      images: { ref: string; state: string; broughtByBerth: boolean; digest?: string }[];
    };
    expect(after.images.map((i) => [i.ref, i.state, i.broughtByBerth])).to.deep.equal([
      [refA, 'Present', true],
      [refB, 'Present', true],
    ]);
    const table = await sb.cli('images', '-o', 'wide');
    expect(table.stdout).to.match(/IMAGE\s+STATE\s+ID\s+SIZE\s+ATTEMPTS\s+DIGEST/);
    await noPasswordAnywhere([p.stdout, p.stderr, denied.stdout, denied.stderr]);
  });

  it('no credential: Blocked/ImagePullBackOff saying unauthorized and how to give one; --pull-retries 1 settles it (exit 5); Never: ImageMissing', async function () {
    await sb.write('a.yaml', attempt('u1', refA));
    const r = await withEnv({ DOCKER_CONFIG: home }, () => sb.cli('reconcile', '--once', '--wait', '--timeout', '60', '--pull-retries', '1'));
    expect(r.code, r.stderr).to.equal(5);
    const rec = await sb.status('u1');
    expect(rec?.phase).to.equal('Blocked');
    expect(rec?.reason).to.equal(REASONS.imagePullBackOff);
    expect(rec?.message).to.contain(`unauthorized at ${reg.host}: give berth a credential (docker login ${reg.host}, or --registry-config FILE)`);
    expect(rec?.message).to.contain('given up after 1 failed pulls');
    await sb.write('a.yaml', attempt('u1', refA).replace('  command:', '  imagePullPolicy: Never\n  command:'));
    const n = await withEnv({ DOCKER_CONFIG: home }, () => sb.cli('reconcile', '--once'));
    expect(n.code, n.stderr).to.equal(0);
    expect((await sb.status('u1'))?.reason).to.equal(REASONS.imageMissing);
  });
});
