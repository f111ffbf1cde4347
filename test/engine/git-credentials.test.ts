/**
 * A git source's https token, for real: git http-backend behind a loopback HTTP server that
 * wants Basic auth. The token works from a file and from an environment variable, and is found
 * nowhere it must not be: not in any git command line (a wrapper on PATH records every argv),
 * not on stdout or stderr, not in the log (a controller at debug level), not in the state
 * folder (status records, source.json, the askpass script), the results, or the containers.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/util/log';
import { startController } from '../support/controller';
import { docker, requireEngine } from '../support/engine';
import { filesHolding } from '../support/files-holding';
import { GitHttpServer } from '../support/git-http';
import { TestRepo } from '../support/git-repo';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const spec = (name: string) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [sh, -c, "sleep 300"]\n`;

describe('git source credentials (real git http-backend, real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  const TOKEN = `tok-${randomBytes(12).toString('hex')}`;
  const ENV_VAR = 'BERTH_TEST_GIT_TOKEN';
  let sb: Sandbox;
  let repo: TestRepo;
  let server: GitHttpServer;
  let savedPath: string | undefined;
  let argvLog: string;

  before(async function () {
    sb = await Sandbox.create('gitcred');
    repo = await TestRepo.create('cred');
    server = new GitHttpServer(repo.dir, 'evals', TOKEN);
    await server.start();
    // Every git berth runs goes through this wrapper, which records its command line.
    const bin = path.join(sb.dir, 'bin');
    argvLog = path.join(sb.dir, 'git-argv.log');
    await fs.mkdir(bin);
    await fs.writeFile(path.join(bin, 'git'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${argvLog}'\nexec /usr/bin/git "$@"\n`, { mode: 0o755 });
    savedPath = process.env['PATH'];
    process.env['PATH'] = `${bin}:${savedPath ?? ''}`;
    process.env[ENV_VAR] = TOKEN;
  });
  after(async function () {
    process.env['PATH'] = savedPath;
    delete process.env[ENV_VAR];
    await server.stop();
    await sb.destroy();
    await repo.remove();
  });

  it('fetches with a token from a file or the environment, and the token is nowhere else', async function () {
    const c1 = await repo.commit('one', { 'specs/a.yaml': spec('a') });
    const url = server.url(repo.bare);
    const tokenFile = path.join(sb.dir, 'token');
    await fs.writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const outputs: string[] = [];

    // without a token: refused by the server, told without hanging on a prompt
    let r = await sb.cli('reconcile', '--once', '--git', url, '--git-path', 'specs');
    outputs.push(r.stdout, r.stderr);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/git fetch: .*(Authentication failed|could not read Username)/);

    // a wrong token: refused too
    const wrong = path.join(sb.dir, 'wrong');
    await fs.writeFile(wrong, 'not-the-token\n');
    r = await sb.cli('reconcile', '--once', '--git', url, '--git-path', 'specs', '--git-token-file', wrong, '--git-username', 'evals');
    outputs.push(r.stdout, r.stderr);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/Authentication failed/);

    r = await sb.cli('reconcile', '--once', '--git', url, '--git-path', 'specs', '--git-token-file', tokenFile, '--git-username', 'evals');
    outputs.push(r.stdout, r.stderr);
    expect(r.code, r.stderr).to.equal(0);
    expect((await sb.status('a'))?.revision).to.equal(c1);

    // from the environment, in a controller logging at debug level
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
    const ctl = startController(sb, { git: url, gitPath: 'specs', gitTokenEnv: ENV_VAR, gitUsername: 'evals', gitInterval: 200 }, undefined, log);
    try {
      await waitFor('b from c2', async () => (await sb.status('b'))?.revision === c2, { instance: sb.instance });
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    outputs.push(ctl.io.stdout, ctl.io.stderr, logged);
    expect(logged).to.include(`revision ${c2.slice(0, 12)} in force`);
    expect(server.requests.some((q) => q.authorized)).to.equal(true);
    expect(server.requests.some((q) => !q.authorized)).to.equal(true);

    // berth source shows the URL, which holds no credentials
    const shown = await sb.cli('source', '-o', 'json');
    outputs.push(shown.stdout, shown.stderr);
    expect(JSON.parse(shown.stdout)).to.deep.include({ url, revision: c2 });

    // the token: in no git command line, output, log line, state or results file, container
    const argv = await fs.readFile(argvLog, 'utf8');
    expect(argv).to.match(/fetch .*--end-of-options|fetch .* -- http/);
    expect(argv).to.not.include(TOKEN);
    for (const o of outputs) expect(o).to.not.include(TOKEN);
    expect(await filesHolding(sb.stateDir, TOKEN)).to.deep.equal([]);
    expect(await filesHolding(sb.resultsRoot, TOKEN)).to.deep.equal([]);
    const askpass = await fs.stat(path.join(sb.stateDir, 'git', sb.instance, 'home', 'askpass.sh'));
    expect(askpass.mode & 0o777).to.equal(0o700);
    for (const name of ['a', 'b']) {
      const id = (await sb.status(name))?.containerId as string;
      expect(JSON.stringify(await docker.getContainer(id).inspect())).to.not.include(TOKEN);
    }
  });

  it('refuses a token flag that cannot be used, naming it and never showing the token', async function () {
    const url = server.url(repo.bare);
    for (const [args, why] of [
      [['--git-token-env', 'BERTH_TEST_NO_SUCH_VAR'], /--git-token-env BERTH_TEST_NO_SUCH_VAR: the variable is not set or empty/],
      [['--git-token-file', path.join(sb.dir, 'missing')], /--git-token-file .*missing: cannot be read/],
      [['--git-token-file', 'x', '--git-token-env', ENV_VAR], /give one of --git-token-file and --git-token-env/],
      [['--git-ssh-key', '/k'], /go with an ssh URL/],
    ] as [string[], RegExp][]) {
      const r = await sb.cli('reconcile', '--once', '--git', url, ...args);
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stderr).to.match(why);
      expect(r.stderr).to.not.include(TOKEN);
    }
    const r = await sb.cli('reconcile', '--once', '--git', 'ssh://git@127.0.0.1/r.git');
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/needs --git-known-hosts/);
  });
});
