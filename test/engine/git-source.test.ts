/**
 * Specs from git, for real: a bare repository over file:// and git daemon over git:// on
 * 127.0.0.1, berth's CLI in-process against the real engine. Commits add, edit and delete specs,
 * an empty commit changes nothing, a force-push goes back, an invalid spec leaves the rest of its
 * revision applied, a revision with no attempts prunes nothing without --allow-empty, sets are
 * added, grown and deleted by commits, a fetch that fails keeps the last good revision (stale)
 * and --once exits 1, and each revision's outcome is written and POSTed once it has finished.
 */
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { SourceStatus } from '../../src/git/status';
import { startController } from '../support/controller';
import { requireEngine } from '../support/engine';
import { freePort, GitDaemon, sshKeyPair, TestRepo } from '../support/git-repo';
import { Sandbox } from '../support/sandbox';
import { run } from '../../src/cli/index';
import { bufferIo } from '../../src/cli/io';
import { waitFor } from '../support/wait';

function spec(name: string, command: string, extra = ''): string {
  return `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [sh, -c, ${JSON.stringify(command)}]\n${extra}`;
}

async function sourceStatus(sb: Sandbox): Promise<SourceStatus> {
  return JSON.parse(await fs.readFile(path.join(sb.stateDir, 'git', sb.instance, 'source.json'), 'utf8')) as SourceStatus;
}

describe('specs from git (real git, real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  let repo: TestRepo;
  beforeEach(async function () {
    sb = await Sandbox.create('git');
    repo = await TestRepo.create('src');
  });
  afterEach(async function () {
    await sb.destroy();
    await repo.remove();
  });

  const once = (...extra: string[]) => sb.cli('reconcile', '--once', '--git', repo.fileUrl, '--git-path', 'specs', ...extra);
  const container = async (name: string) => (await sb.status(name))?.containerId;

  it('follows commits: revisions recorded, unchanged specs left alone, deletions collected, invalid specs isolated, force-push and empty revisions', async function () {
    const c1 = await repo.commit('two attempts', {
      'specs/a.yaml': spec('a', 'sleep 300'),
      'specs/b.yaml': spec('b', 'sleep 300'),
      'README.md': 'not a spec folder',
    });
    let r = await once();
    expect(r.code, r.stderr).to.equal(0);
    expect((await sb.status('a'))?.revision).to.equal(c1);
    let src = await sourceStatus(sb);
    expect(src).to.deep.include({ url: repo.fileUrl, path: 'specs', revision: c1, stale: false, specErrors: [] });
    expect(src.appliedAt).to.be.a('string');
    expect(src.fetchedAt).to.be.a('string');
    const a1 = await container('a');
    const b1 = await container('b');

    // get -o json and describe show the revision (they follow the state folder's source without --specs)
    const got = await sb.cli('get', '-o', 'json');
    expect(got.code, got.stderr).to.equal(0);
    const items = (JSON.parse(got.stdout) as { items: { metadata: { name: string }; status: { revision?: string } }[] }).items;
    expect(items.map((i) => [i.metadata.name, i.status.revision])).to.deep.equal([
      ['a', c1],
      ['b', c1],
    ]);

    // edit b, add c: a is left alone (same spec hash, same container, its revision stays c1)
    const c2 = await repo.commit('edit b, add c', { 'specs/b.yaml': spec('b', 'sleep 301'), 'specs/c.yaml': spec('c', 'sleep 300') });
    r = await once();
    expect(r.code, r.stderr).to.equal(0);
    expect(await container('a')).to.equal(a1);
    expect((await sb.status('a'))?.revision).to.equal(c1);
    expect(await container('b')).to.not.equal(b1);
    expect((await sb.status('b'))?.revision).to.equal(c2);
    expect((await sb.status('c'))?.revision).to.equal(c2);
    const describe = await sb.cli('describe', 'b');
    expect(describe.stdout).to.include(`Created from:   revision ${c2}`);

    // an empty commit: a new revision in force, nothing on the engine changes
    const c3 = await repo.commit('nothing', {}, { allowEmpty: true });
    const before = await Promise.all(['a', 'b', 'c'].map(container));
    r = await once();
    expect(r.code, r.stderr).to.equal(0);
    expect((await sourceStatus(sb)).revision).to.equal(c3);
    expect(await Promise.all(['a', 'b', 'c'].map(container))).to.deep.equal(before);
    expect((await sb.status('b'))?.revision).to.equal(c2);

    // delete c; make b invalid and add d: c is collected, d applies, b is left as it is
    const bRunning = await container('b');
    const c4 = await repo.commit('delete c, break b, add d', {
      'specs/c.yaml': null,
      'specs/b.yaml': spec('b', 'sleep 1', '  bogus: 1\n'),
      'specs/d.yaml': spec('d', 'sleep 300'),
    });
    r = await once();
    expect(r.code, 'spec errors: exit 2').to.equal(2);
    expect(r.stderr).to.match(/bogus/);
    expect(await sb.status('c')).to.equal(undefined);
    expect((await sb.status('d'))?.revision).to.equal(c4);
    expect(await container('b')).to.equal(bRunning);
    src = await sourceStatus(sb);
    expect(src.revision).to.equal(c4);
    expect(src.specErrors.map((e) => e.code)).to.include('schema');

    // a force-push back to c2: c comes back, d goes, b is valid again (its spec as at c2: same hash, left alone)
    await repo.forcePushTo(c2);
    r = await once();
    expect(r.code, r.stderr).to.equal(0);
    expect((await sourceStatus(sb)).revision).to.equal(c2);
    expect(await sb.status('d')).to.equal(undefined);
    expect((await sb.status('c'))?.revision).to.equal(c2);
    expect(await container('b')).to.equal(bRunning);

    // a revision with no attempts removes nothing without --allow-empty
    await repo.commit('empty the folder', { 'specs/a.yaml': null, 'specs/b.yaml': null, 'specs/c.yaml': null, 'specs/keep.txt': 'x' });
    r = await once();
    expect(r.stderr).to.match(/yields no attempts .*nothing was removed/);
    expect(await container('a')).to.equal(a1);
    r = await once('--allow-empty');
    expect(r.code, r.stderr).to.equal(0);
    expect(await sb.status('a')).to.equal(undefined);
  });

  it("AttemptSets from git: a commit adds a set, one grows it (only the new children, from the new revision), one deletes it; summary carries each child's revision", async function () {
    const SET = (seeds: number) =>
      `apiVersion: berth.dev/v1\nkind: AttemptSet\nmetadata:\n  name: evals\nspec:\n  matrix:\n    model: [m1, m2]\n    seed: {range: [0, ${seeds}]}\n  template:\n    image: berth/busybox:local\n    command: [sh, -c, 'echo 1 > /results/score.json']\n  score: {file: score.json, pass: 1}\n`;
    const c1 = await repo.commit('a set', { 'specs/evals.yaml': SET(1), 'specs/a.yaml': spec('a', 'true') });
    let r = await once('--wait', '--timeout', '60');
    expect(r.code, r.stderr).to.equal(0);
    const kids1 = ['evals-m1-0', 'evals-m2-0'];
    for (const k of kids1) expect((await sb.status(k))?.revision, k).to.equal(c1);
    const ids = await Promise.all(kids1.map(container));

    const c2 = await repo.commit('a second seed', { 'specs/evals.yaml': SET(2) });
    r = await once('--wait', '--timeout', '60');
    expect(r.code, r.stderr).to.equal(0);
    expect(await Promise.all(kids1.map(container)), 'the first children are left alone').to.deep.equal(ids);
    for (const k of kids1) expect((await sb.status(k))?.revision, k).to.equal(c1);
    for (const k of ['evals-m1-1', 'evals-m2-1']) expect((await sb.status(k))?.revision, k).to.equal(c2);
    // summary without --specs reads the revision in force
    const io = bufferIo();
    const code = await run(
      ['node', 'berth', 'summary', '-o', 'json', ...sb.globalArgs().filter((_, i, all) => all[i] !== '--specs' && all[i - 1] !== '--specs')],
      io,
    );
    expect(code, io.stderr).to.equal(0);
    const sets = (JSON.parse(io.stdout) as { sets: { name: string; children: { name: string; revision: string | null }[] }[] }).sets;
    expect(sets.map((x) => x.name)).to.deep.equal(['evals']);
    expect(Object.fromEntries(sets[0]!.children.map((c) => [c.name, c.revision]))).to.deep.equal({
      'evals-m1-0': c1,
      'evals-m1-1': c2,
      'evals-m2-0': c1,
      'evals-m2-1': c2,
    });

    await repo.commit('the set deleted', { 'specs/evals.yaml': null });
    r = await once('--wait', '--timeout', '60');
    expect(r.code, r.stderr).to.equal(0);
    for (const k of [...kids1, 'evals-m1-1', 'evals-m2-1']) expect(await sb.status(k), k).to.equal(undefined);
    expect((await sb.status('a'))?.revision).to.equal(c1);
  });

  it('a fetch that fails: --once exits 1 and changes nothing; the revision in force stays, marked stale; the next fetch recovers', async function () {
    const c1 = await repo.commit('one', { 'specs/a.yaml': spec('a', 'sleep 300') });
    let r = await once();
    expect(r.code, r.stderr).to.equal(0);
    const a1 = await container('a');
    await repo.commit('two', { 'specs/a.yaml': spec('a', 'sleep 301') });
    const away = `${repo.bare}.away`;
    await fs.rename(repo.bare, away);
    r = await once();
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/nothing was planned or changed \(revision [0-9a-f]{12} stays in force, marked stale\)/);
    let src = await sourceStatus(sb);
    expect(src).to.deep.include({ revision: c1, stale: true });
    expect(src.lastError?.failures).to.equal(1);
    // berth source: human and JSON
    const shown = await sb.cli('source');
    expect(shown.code, shown.stderr).to.equal(0);
    expect(shown.stdout).to.include(`URL:         ${repo.fileUrl}`);
    expect(shown.stdout).to.include(`Revision:    ${c1} (in force)`);
    expect(shown.stdout).to.match(/Stale: {7}yes: 1 fetch failed in a row, the last at .*; next try /);
    expect(shown.stdout).to.match(/git fetch: .*(does not appear to be a git repository|Could not read)/);
    const json = await sb.cli('source', '-o', 'json');
    expect(JSON.parse(json.stdout)).to.deep.include({ url: repo.fileUrl, path: 'specs', revision: c1, stale: true });
    expect(await fs.readlink(path.join(sb.stateDir, 'git', sb.instance, 'current'))).to.equal(`rev-${c1}`);
    expect(await container('a')).to.equal(a1);
    await fs.rename(away, repo.bare);
    r = await once();
    expect(r.code, r.stderr).to.equal(0);
    src = await sourceStatus(sb);
    expect(src.stale).to.equal(false);
    expect(src.lastError).to.equal(undefined);
    expect((await sb.cli('source')).stdout).to.match(/Stale: {7}no\nSpec errors: none\n$/);
    expect(await container('a')).to.not.equal(a1);
  });

  it('a fromFile secret inside a git source is an error; plan and validate read the remote without switching the revision in force', async function () {
    const c1 = await repo.commit('secret file', {
      'specs/a.yaml': spec('a', 'true', '  secrets:\n    - name: tok\n      fromFile: tok.txt\n'),
      'specs/tok.txt': 'committed-secret',
      'specs/b.yaml': spec('b', 'true'),
    });
    const v = await sb.cli('validate', '--git', repo.fileUrl, '--git-path', 'specs', '-o', 'json');
    expect(v.code).to.equal(2);
    const body = JSON.parse(v.stdout) as { revision: string; attempts: string[]; errors: { code: string; message: string }[] };
    expect(body.revision).to.equal(c1);
    expect(body.attempts).to.deep.equal(['b']);
    expect(body.errors.map((e) => e.code)).to.deep.equal(['git-secret']);
    const p = await sb.cli('plan', '--git', repo.fileUrl, '--git-path', 'specs');
    expect(p.code).to.equal(2);
    expect(p.stdout).to.include(`revision ${c1}`);
    expect(p.stdout).to.match(/attempt b: provision/);
    // neither switched anything, nor left a folder behind
    const names = await fs.readdir(path.join(sb.stateDir, 'git', sb.instance));
    expect(names.filter((n) => n !== 'mirror.git' && n !== 'home')).to.deep.equal([]);
  });

  it('--git-verify applies only commits signed by an allowed key; others keep the last good revision in force, stale', async function () {
    const good = await sshKeyPair(repo.dir, 'allowed');
    const other = await sshKeyPair(repo.dir, 'other');
    const signers = path.join(repo.dir, 'allowed_signers');
    await fs.writeFile(signers, `test@berth.invalid ${good.pub}\n`);
    const verify = () => once('--git-verify', signers);
    const c1 = await repo.commit('signed', { 'specs/a.yaml': spec('a', 'sleep 300') }, { signingKey: good.key });
    let r = await verify();
    expect(r.code, r.stderr).to.equal(0);
    expect((await sb.status('a'))?.revision).to.equal(c1);

    const c2 = await repo.commit('unsigned', { 'specs/b.yaml': spec('b', 'sleep 300') });
    r = await verify();
    expect(r.code).to.equal(1);
    expect(r.stderr).to.include(`commit ${c2.slice(0, 12)} is not signed by a key in ${signers}`);
    expect(await sb.status('b')).to.equal(undefined);
    expect(await sourceStatus(sb)).to.deep.include({ revision: c1, stale: true });

    await repo.commit('signed by a key not allowed', { 'specs/c.yaml': spec('c', 'sleep 300') }, { signingKey: other.key });
    r = await verify();
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/is not signed by a key in/);
    // plan refuses it too
    const p = await sb.cli('plan', '--git', repo.fileUrl, '--git-path', 'specs', '--git-verify', signers);
    expect(p.code).to.equal(1);

    const c4 = await repo.commit('signed again', { 'specs/d.yaml': spec('d', 'sleep 300') }, { signingKey: good.key });
    r = await verify();
    expect(r.code, r.stderr).to.equal(0);
    expect((await sb.status('d'))?.revision).to.equal(c4);
    expect((await sb.status('b'))?.revision).to.equal(c4);
    expect(await sourceStatus(sb)).to.deep.include({ revision: c4, stale: false });
  });

  it('berth source without a git source exits 1; commands without --specs follow the revision in force', async function () {
    const none = await sb.cli('source');
    expect(none.code).to.equal(1);
    expect(none.stderr).to.match(/has no git source/);
    const c1 = await repo.commit('one', { 'specs/a.yaml': spec('a', 'true') });
    expect((await once()).code).to.equal(0);
    // no --specs: describe reads the spec from the revision in force
    const g = sb.globalArgs().filter((_, i, all) => all[i] !== '--specs' && all[i - 1] !== '--specs');
    const io = bufferIo();
    const code = await run(['node', 'berth', 'describe', 'a', ...g], io);
    expect(code, io.stderr).to.equal(0);
    expect(io.stdout).to.include(`Revision:       ${c1} (in force)`);
    expect(io.stdout).to.match(/Spec file:\s+\S+rev-[0-9a-f]{40}\/a\.yaml/);
  });

  it('refuses command-running transports, credentials in URLs and bad refs before git runs', async function () {
    const marker = path.join(sb.dir, 'pwned');
    for (const [args, why] of [
      [['--git', `ext::sh`], /"ext::" transport form is refused/],
      [['--git', 'https://user:tok3n@example.com/r.git'], /holds credentials/],
      [['--git', repo.fileUrl, '--git-ref', '--upload-pack=touch'], /starts with "-"/],
      [['--git', repo.fileUrl, '--git-path', '../x'], /holds "\.\."/],
      [['--git-ref', 'main'], /--git-ref goes with --git/],
    ] as [string[], RegExp][]) {
      const r = await sb.cli('reconcile', '--once', ...args);
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stderr, args.join(' ')).to.match(why);
      expect(r.stderr).to.not.include('tok3n');
    }
    await fs.access(marker).then(
      () => expect.fail('a command ran'),
      () => undefined,
    );
  });

  it('webhook: a POST with a valid X-Hub-Signature-256 fetches at once; a bad or missing one gets 401 and changes nothing', async function () {
    const SECRET = 'hook-secret-value';
    process.env['BERTH_TEST_HOOK_SECRET'] = SECRET;
    const port = await freePort();
    const c1 = await repo.commit('one', { 'specs/a.yaml': spec('a', 'sleep 300') });
    const ctl = startController(sb, {
      git: repo.fileUrl,
      gitPath: 'specs',
      gitInterval: 3_600_000,
      webhookAddr: `127.0.0.1:${port}`,
      webhookSecretEnv: 'BERTH_TEST_HOOK_SECRET',
    });
    const post = (body: string, sig?: string) =>
      fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...(sig !== undefined ? { 'x-hub-signature-256': sig } : {}) },
      });
    const sign = (body: string, key = SECRET) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
    try {
      await waitFor('a from c1', async () => (await sb.status('a'))?.revision === c1, { instance: sb.instance });
      await waitFor('the webhook listening', async () => (await post('{}').catch(() => undefined))?.status === 401, { timeoutMs: 10_000 });
      const fetchedAt = (await sourceStatus(sb)).fetchedAt;
      const c2 = await repo.commit('two', { 'specs/b.yaml': spec('b', 'sleep 300') });
      const body = JSON.stringify({ ref: 'refs/heads/main', after: c2 });
      expect((await post(body)).status, 'no signature').to.equal(401);
      expect((await post(body, sign(body, 'another-secret'))).status, 'wrong key').to.equal(401);
      expect((await post(body, sign(`${body} `))).status, 'another body').to.equal(401);
      expect((await post(body, 'sha256=zz')).status, 'not hex').to.equal(401);
      expect((await fetch(`http://127.0.0.1:${port}/`)).status, 'GET').to.equal(405);
      expect((await post('x'.repeat(1024 * 1024 + 1), sign('x'))).status, 'too large').to.equal(413);
      expect((await sourceStatus(sb)).fetchedAt, 'nothing fetched').to.equal(fetchedAt);
      expect(await sb.status('b')).to.equal(undefined);
      const t0 = Date.now();
      expect((await post(body, sign(body))).status).to.equal(202);
      // at once, not at the hourly poll: the wait (20 s) ends long before the next poll
      const b = await waitFor(
        'b running from c2',
        async () => {
          const s = await sb.status('b');
          return s?.revision === c2 && s.startedAt ? s : undefined;
        },
        { instance: sb.instance },
      );
      const ms = Date.parse(b.startedAt as string) - t0;
      console.log(`      webhook → first container started: ${ms} ms`);
    } finally {
      delete process.env['BERTH_TEST_HOOK_SECRET'];
      expect(await ctl.stop()).to.equal(0);
    }
  });

  it("--notify-url: once all of a revision's attempts finished, its outcome is written and POSTed, signed, retried after a failure", async function () {
    const SECRET = 'notify-secret-value';
    process.env['BERTH_TEST_NOTIFY_SECRET'] = SECRET;
    const got: { body: string; sig: string | undefined; status: number }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const status = got.length === 0 ? 500 : 200; // the first delivery fails: it is retried
        got.push({ body, sig: req.headers['x-berth-signature-256'] as string | undefined, status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    const port = (receiver.address() as { port: number }).port;
    const c1 = await repo.commit('one', { 'specs/ok.yaml': spec('ok', 'true'), 'specs/bad.yaml': spec('bad', 'exit 3') });
    const ctl = startController(sb, {
      git: repo.fileUrl,
      gitPath: 'specs',
      gitInterval: 3_600_000,
      notifyUrl: `http://127.0.0.1:${port}/hook`,
      notifySecretEnv: 'BERTH_TEST_NOTIFY_SECRET',
    });
    try {
      await waitFor('two deliveries', async () => got.length >= 2 || undefined, { timeoutMs: 60_000 });
    } finally {
      delete process.env['BERTH_TEST_NOTIFY_SECRET'];
      expect(await ctl.stop()).to.equal(0);
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
    expect(got.map((g) => g.status)).to.deep.equal([500, 200]);
    const [first, second] = got as [(typeof got)[0], (typeof got)[0]];
    expect(second.body).to.equal(first.body);
    expect(second.sig).to.equal(`sha256=${createHmac('sha256', SECRET).update(second.body).digest('hex')}`);
    const outcome = JSON.parse(second.body) as {
      revision: string;
      url: string;
      counts: Record<string, number>;
      attempts: { name: string; phase: string; exitCode: number }[];
    };
    expect(outcome).to.deep.include({ revision: c1, url: repo.fileUrl, counts: { Failed: 1, Succeeded: 1 } });
    expect(outcome.attempts.map((a) => [a.name, a.phase, a.exitCode])).to.deep.equal([
      ['bad', 'Failed', 3],
      ['ok', 'Succeeded', 0],
    ]);
    expect(await fs.readFile(path.join(sb.stateDir, 'git', sb.instance, 'outcomes', `${c1}.json`), 'utf8')).to.equal(second.body);
  });

  it("reconcile --once --wait --notify-url: the revision's outcome is written and POSTed (a failed try retried) before the exit, once", async function () {
    const SECRET = 'notify-once-secret';
    const secretFile = path.join(sb.dir, 'notify-secret');
    await fs.writeFile(secretFile, `${SECRET}\n`, { mode: 0o600 });
    const got: { body: string; sig: string | undefined; status: number }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const status = got.length === 0 ? 503 : 200; // the first try fails: --once waits for the next
        got.push({ body, sig: req.headers['x-berth-signature-256'] as string | undefined, status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    const hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    try {
      const c1 = await repo.commit('one', { 'specs/ok.yaml': spec('ok', 'true'), 'specs/bad.yaml': spec('bad', 'exit 3') });
      const outcomeFile = path.join(sb.stateDir, 'git', sb.instance, 'outcomes', `${c1}.json`);
      // without --wait the attempts have only started: no outcome yet
      let r = await once('--notify-url', hook, '--notify-secret-file', secretFile);
      expect(r.code, r.stderr).to.equal(0);
      expect(got).to.deep.equal([]);
      await fs.access(outcomeFile).then(
        () => expect.fail('an outcome before the attempts finished'),
        () => undefined,
      );
      r = await once('--wait', '--timeout', '60', '--notify-url', hook, '--notify-secret-file', secretFile);
      expect(r.code, r.stderr).to.equal(3);
      // delivered (after one failed try) before the command returned
      expect(got.map((g) => g.status)).to.deep.equal([503, 200]);
      const body = (got[1] as (typeof got)[0]).body;
      expect(got[1]?.sig).to.equal(`sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`);
      const outcome = JSON.parse(body) as {
        revision: string;
        url: string;
        counts: Record<string, number>;
        attempts: { name: string; phase: string; exitCode: number }[];
      };
      expect(outcome).to.deep.include({ revision: c1, url: repo.fileUrl, counts: { Failed: 1, Succeeded: 1 } });
      expect(outcome.attempts.map((a) => [a.name, a.phase, a.exitCode])).to.deep.equal([
        ['bad', 'Failed', 3],
        ['ok', 'Succeeded', 0],
      ]);
      expect(await fs.readFile(outcomeFile, 'utf8')).to.equal(body);
      // the same revision again: written once, sent once
      r = await once('--wait', '--timeout', '60', '--notify-url', hook, '--notify-secret-file', secretFile);
      expect(r.code, r.stderr).to.equal(3);
      expect(got).to.have.length(2);
      // --notify-url is checked before anything runs, with --once too
      r = await once('--notify-url', hook);
      expect(r.code).to.equal(2);
      expect(r.stderr).to.match(/--notify-url needs --notify-secret-file or --notify-secret-env/);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it('controller over git://: polls, goes stale while the daemon is down, recovers and applies the new commit', async function () {
    const daemon = new GitDaemon(repo.dir, await freePort());
    await daemon.start();
    const c1 = await repo.commit('one', { 'specs/a.yaml': spec('a', 'sleep 300') });
    const ctl = startController(sb, { git: daemon.url(repo.bare), gitPath: 'specs', gitInterval: 200 });
    try {
      await waitFor('a running from c1', async () => (await sb.status('a'))?.phase === 'Running' && (await sb.status('a'))?.revision === c1, {
        instance: sb.instance,
      });
      await daemon.stop();
      const c2 = await repo.commit('two', { 'specs/b.yaml': spec('b', 'sleep 300') });
      await waitFor('the source marked stale', async () => (await sourceStatus(sb)).stale, { dirs: [path.join(sb.stateDir, 'git', sb.instance)] });
      const src = await sourceStatus(sb);
      expect(src.revision).to.equal(c1);
      expect(src.lastError?.message).to.match(/git fetch/);
      expect(await sb.status('b')).to.equal(undefined);
      expect((await sb.status('a'))?.phase).to.equal('Running');
      await daemon.start();
      await waitFor('b running from c2', async () => (await sb.status('b'))?.revision === c2 && (await sb.status('b'))?.phase === 'Running', {
        instance: sb.instance,
        timeoutMs: 30_000,
      });
      expect((await sourceStatus(sb)).stale).to.equal(false);
      expect((await sb.status('a'))?.revision).to.equal(c1);
    } finally {
      expect(await ctl.stop()).to.equal(0);
      await daemon.stop();
    }
  });
});
