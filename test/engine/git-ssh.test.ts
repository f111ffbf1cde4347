/**
 * A git source over ssh, for real: Debian's sshd on 127.0.0.1 (test/support/git-ssh.ts), a key
 * file and a known_hosts file. The key's content is found nowhere but its file, and its path in
 * no git command line (wrappers on PATH record the argv of every git and ssh berth runs), output,
 * log line (a controller at debug level), state file (status records, source.json) or result.
 * A host key that does not match, or is not known, fails closed: nothing is asked of the
 * server, nothing planned, the revision in force stays (stale), and the error says why.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/util/log';
import { startController } from '../support/controller';
import { docker, requireEngine } from '../support/engine';
import { filesHolding } from '../support/files-holding';
import { SshGitServer } from '../support/git-ssh';
import { sshKeyPair, TestRepo } from '../support/git-repo';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const spec = (name: string) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [sh, -c, "sleep 300"]\n`;

describe('git source over ssh (real sshd on loopback, real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  let repo: TestRepo;
  let sshd: SshGitServer;
  let keys: string;
  let key: string;
  /** The private key's base64 lines: the secret. */
  let keyLines: string[];
  let knownHosts: string;
  let savedPath: string | undefined;
  let argvLog: string;

  const sourceJson = async () => fs.readFile(path.join(sb.stateDir, 'git', sb.instance, 'source.json'), 'utf8');
  const flags = (kh = knownHosts, k = key) => ['--git', sshd.url, '--git-path', 'specs', '--git-ssh-key', k, '--git-known-hosts', kh];
  const expectNoKey = (text: string, what: string) => {
    expect(text, what).to.not.include(key);
    for (const l of keyLines) expect(text, what).to.not.include(l);
  };

  before(async function () {
    sb = await Sandbox.create('gitssh');
    repo = await TestRepo.create('ssh');
    keys = path.join(sb.dir, 'keys');
    await fs.mkdir(keys, { mode: 0o700 });
    const client = await sshKeyPair(keys, 'client');
    key = client.key;
    keyLines = (await fs.readFile(key, 'utf8')).split('\n').filter((l) => l !== '' && !l.startsWith('-----'));
    expect(keyLines.length).to.be.greaterThan(2);
    await fs.mkdir(path.join(sb.dir, 'sshd'), { mode: 0o700 });
    sshd = new SshGitServer(path.join(sb.dir, 'sshd'), repo.bare);
    await sshd.start(client.pub);
    knownHosts = path.join(keys, 'known_hosts');
    await fs.writeFile(knownHosts, await sshd.knownHostsLine());
    // Every git and ssh berth runs goes through these wrappers, which record their command lines.
    const bin = path.join(sb.dir, 'bin');
    argvLog = path.join(sb.dir, 'argv.log');
    await fs.mkdir(bin);
    for (const tool of ['git', 'ssh']) {
      await fs.writeFile(path.join(bin, tool), `#!/bin/sh\nprintf '${tool} %s\\n' "$*" >> '${argvLog}'\nexec /usr/bin/${tool} "$@"\n`, { mode: 0o755 });
    }
    savedPath = process.env['PATH'];
    process.env['PATH'] = `${bin}:${savedPath ?? ''}`;
  });
  after(async function () {
    process.env['PATH'] = savedPath;
    await sshd?.stop();
    await sb?.destroy();
    await repo?.remove();
  });

  it('fetches with a key file and a known_hosts file; the key is nowhere else and its path in no argv, log, status or result', async function () {
    const c1 = await repo.commit('one', { 'specs/a.yaml': spec('a') });
    const outputs: string[] = [];
    let r = await sb.cliWith({ '--log-level': 'debug' }, 'reconcile', '--once', ...flags());
    outputs.push(r.stdout, r.stderr);
    expect(r.code, r.stderr).to.equal(0);
    expect((await sb.status('a'))?.revision).to.equal(c1);
    expect(await fs.readFile(sshd.asked, 'utf8')).to.equal(`git-upload-pack '${repo.bare}'\n`);

    // a controller polling over ssh, logging at debug level
    const c2 = await repo.commit('two', { 'specs/b.yaml': spec('b') });
    let logged = '';
    const log = createLogger({
      level: 'debug',
      format: 'text',
      stream: new Writable({
        write(chunk: Buffer, _e, cb) {
          logged += chunk.toString();
          cb();
        },
      }),
    });
    const ctl = startController(sb, { git: sshd.url, gitPath: 'specs', gitSshKey: key, gitKnownHosts: knownHosts, gitInterval: 200 }, undefined, log);
    try {
      await waitFor('b from c2', async () => (await sb.status('b'))?.revision === c2, { instance: sb.instance });
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    outputs.push(ctl.io.stdout, ctl.io.stderr, logged);
    expect(logged).to.include(`revision ${c2.slice(0, 12)} in force`);

    r = await sb.cli('source', '-o', 'json');
    outputs.push(r.stdout, r.stderr);
    expect(JSON.parse(r.stdout)).to.deep.include({ url: sshd.url, revision: c2, stale: false });
    r = await sb.cli('describe', 'b');
    outputs.push(r.stdout, r.stderr);

    // git's command lines: the URL after `--`, never the key's path or content; ssh's: the path (from
    // GIT_SSH_COMMAND, as -i), never the content.
    const argv = await fs.readFile(argvLog, 'utf8');
    const gitLines = argv.split('\n').filter((l) => l.startsWith('git '));
    expect(gitLines.some((l) => l.includes(`fetch`) && l.includes(`-- ${sshd.url}`))).to.equal(true);
    expectNoKey(gitLines.join('\n'), 'git argv');
    const sshLines = argv.split('\n').filter((l) => l.startsWith('ssh '));
    expect(sshLines.length).to.be.greaterThan(0);
    expect(sshLines.every((l) => l.includes('StrictHostKeyChecking=yes') && l.includes(`UserKnownHostsFile=${knownHosts}`))).to.equal(true);
    for (const l of keyLines) expect(sshLines.join('\n')).to.not.include(l);
    for (const o of outputs) expectNoKey(o, 'output');
    expectNoKey(await sourceJson(), 'source.json');
    for (const needle of [key, ...keyLines]) {
      expect(await filesHolding(sb.stateDir, needle), needle).to.deep.equal([]);
      expect(await filesHolding(sb.resultsRoot, needle), needle).to.deep.equal([]);
    }
    for (const name of ['a', 'b']) {
      const id = (await sb.status(name))?.containerId as string;
      expectNoKey(JSON.stringify(await docker.getContainer(id).inspect()), `container ${name}`);
    }
  });

  it('a host key that does not match, or is not known, fails closed: nothing asked of the server, nothing changed, stale, told why', async function () {
    const before = (await sb.status('b'))?.revision as string;
    await repo.commit('three', { 'specs/c.yaml': spec('c') });
    const other = await sshKeyPair(keys, 'impostor');
    const wrong = path.join(keys, 'known_hosts.wrong');
    await fs.writeFile(wrong, await sshd.knownHostsLine(other.pub.split(' ').slice(0, 2).join(' ')));
    const unknown = path.join(keys, 'known_hosts.other');
    await fs.writeFile(unknown, `[127.0.0.1]:1 ${(await fs.readFile(path.join(sshd.dir, 'host_ed25519.pub'), 'utf8')).trim()}\n`);
    const asked = await fs.readFile(sshd.asked, 'utf8');
    const logAt = sshd.log.length;
    for (const [kh, why] of [
      [wrong, /Host key verification failed/],
      [unknown, /Host key verification failed/],
    ] as const) {
      const r = await sb.cliWith({ '--log-level': 'debug' }, 'reconcile', '--once', ...flags(kh));
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stderr).to.match(why);
      expect(r.stderr).to.match(/nothing was planned or changed \(revision [0-9a-f]{12} stays in force, marked stale\)/);
      expectNoKey(r.stdout + r.stderr, 'output');
      const src = JSON.parse(await sourceJson()) as { revision: string; stale: boolean; lastError: { message: string } };
      expect(src).to.deep.include({ revision: before, stale: true });
      expect(src.lastError.message).to.match(why);
      expectNoKey(await sourceJson(), 'source.json');
      expect(await sb.status('c')).to.equal(undefined);
    }
    // the server never ran a command for these (the host was refused before the key was offered)
    expect(await fs.readFile(sshd.asked, 'utf8')).to.equal(asked);
    expect(sshd.log.slice(logAt)).to.not.match(/Accepted (key|publickey)/);
  });

  it('a key the server does not accept fails with its answer; a key others may read is refused before git runs', async function () {
    const stranger = await sshKeyPair(keys, 'stranger');
    let r = await sb.cli('reconcile', '--once', ...flags(knownHosts, stranger.key));
    expect(r.code, r.stderr).to.equal(1);
    expect(r.stderr).to.match(/git fetch: .*Permission denied \(publickey\)/);
    expect(r.stderr).to.not.include(stranger.key);
    const open = path.join(keys, 'open');
    await fs.copyFile(key, open);
    await fs.chmod(open, 0o644);
    const lines = (await fs.readFile(argvLog, 'utf8')).length;
    r = await sb.cli('reconcile', '--once', ...flags(knownHosts, open));
    expect(r.code).to.equal(2);
    expect(r.stderr).to.include(`--git-ssh-key ${open}: others may read it (mode 0644); ssh ignores such a key: chmod 600 it`);
    expect((await fs.readFile(argvLog, 'utf8')).length, 'no git ran').to.equal(lines);
  });
});
