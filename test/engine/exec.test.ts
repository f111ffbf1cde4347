/**
 * berth exec, berth cp, berth release and spec.sandbox on the real engine (docs/CONTRACT.md,
 * "Exec, copy and sandboxes"): each contract line, and a touched run shown as such everywhere
 * berth shows a result (status record, status.json, get -o wide and -o json, describe, summary
 * and its JSON, the report).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { runCp } from '../../src/cli/commands/cp';
import { runExec } from '../../src/cli/commands/exec';
import { makeContext, UsageError } from '../../src/cli/context';
import { bufferIo } from '../../src/cli/io';
import { EXEC } from '../../src/constants';
import { silentLogger } from '../../src/util/log';
import { requireEngine, TEST_LABEL, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const run = promisify(execFile);

/** berth exec in-process, its output captured (stdin: `input`). */
async function bexec(sb: Sandbox, name: string, cmd: string[], o: Parameters<typeof runExec>[3] = {}, input?: string) {
  const io = bufferIo();
  const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, io, {
    engine: sb.engine,
    log: silentLogger(),
  });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const stdin = new PassThrough();
  if (input !== undefined) stdin.end(input);
  const text = (s: PassThrough) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    return () => Buffer.concat(chunks).toString('utf8');
  };
  const out = text(stdout);
  const err = text(stderr);
  const code = await runExec(ctx, name, cmd, o, { stdin, stdout, stderr });
  return { code, stdout: out(), stderr: err(), diag: io.stderr };
}

async function bcp(sb: Sandbox, src: string, dest: string) {
  const io = bufferIo();
  const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, io, {
    engine: sb.engine,
    log: silentLogger(),
  });
  const stdout = new PassThrough();
  stdout.resume();
  const code = await runCp(ctx, src, dest, { stdin: new PassThrough(), stdout });
  return { code, stderr: io.stderr };
}

const running = (name: string, extra = '') =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [sh, -c, 'sleep 300']\n  deadlineSeconds: 300\n${extra}`;
const sandbox = (name: string, extra = '') =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  sandbox: true\n  deadlineSeconds: 300\n${extra}`;

describe('exec, cp and sandboxes (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  let host: string;
  beforeEach(async function () {
    sb = await Sandbox.create('exec');
    host = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-exec-host-'));
  });
  afterEach(async function () {
    await sb.destroy();
    await fs.rm(host, { recursive: true, force: true });
  });

  it('berth exec: exit code and output passed through, -w, -i, the attempt user; --timeout kills it in the container (124); not Running is refused with its phase', async function () {
    await sb.write('done.yaml', sb.attempt('done', 'true'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    await sb.write('a.yaml', running('a', '  user: "1234:2345"\n'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    const r = await bexec(sb, 'a', ['sh', '-c', 'echo out; echo err >&2; id -u; pwd; exit 7']);
    expect([r.code, r.stdout, r.stderr]).to.deep.equal([7, 'out\n1234\n/workspace\n', 'err\n']);
    expect((await bexec(sb, 'attempt/a', ['pwd'], { workdir: '/tmp' })).stdout).to.equal('/tmp\n');
    expect((await bexec(sb, 'a', ['sh', '-c', 'tr a-z A-Z'], { interactive: true }, 'typed in\n')).stdout).to.equal('TYPED IN\n');
    // past --timeout: killed with what it started, in the container
    const t0 = Date.now();
    const slow = await bexec(sb, 'a', ['sh', '-c', 'sleep 211 & sleep 212; echo never'], { timeout: 1000 });
    expect(slow.code).to.equal(EXEC.timedOutExit);
    expect(slow.stdout).to.equal('');
    expect(slow.diag).to.match(/past --timeout 1s; killed in the container/);
    expect(Date.now() - t0).to.be.below(15_000);
    const ps = await bexec(sb, 'a', ['ps', '-o', 'args']);
    expect(ps.stdout).to.not.match(/sleep 21[12]/);
    // not Running: refused, its phase named; nothing recorded for it
    const done = await bexec(sb, 'done', ['true']);
    expect(done.code).to.equal(1);
    expect(done.diag).to.match(/attempt done: it is Succeeded.*not Running/);
    const lines = (await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', EXEC.record), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l.event === 'begin')).to.have.length(5);
    const ends = lines.filter((l) => l.event === 'end');
    expect(ends.map((l) => l.exitCode)).to.deep.equal([7, 0, 0, 124, 0]);
    expect(ends[0]).to.include({ stdout: 'out\n1234\n/workspace\n', stderr: 'err\n' });
    expect(ends[3]).to.include({ timedOut: true, killed: true });
    expect(typeof ends[0]?.durationMs).to.equal('number');
    await fs.access(path.join(sb.resultsRoot, 'done', 'run-1', EXEC.record)).then(
      () => expect.fail('a refused exec made a record'),
      () => undefined,
    );
  });

  it("berth exec -t: one stream from a terminal, sized as the caller's", async function () {
    await sb.write('a.yaml', running('a'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, bufferIo(), {
      engine: sb.engine,
      log: silentLogger(),
    });
    const stdout = Object.assign(new PassThrough(), { columns: 123, rows: 45 });
    const stderr = new PassThrough();
    const chunks: Buffer[] = [];
    stdout.on('data', (c: Buffer) => chunks.push(c));
    let errBytes = 0;
    stderr.on('data', (c: Buffer) => (errBytes += c.length));
    const code = await runExec(
      ctx,
      'a',
      [
        'sh',
        '-c',
        'test -t 1 && echo is-a-tty; echo to-stderr >&2; exec 3<&1; until stty size 0<&3 2>/dev/null | grep -q "^[1-9]"; do sleep 0.1; done; stty size 0<&3; exit 4',
      ],
      { tty: true },
      { stdin: new PassThrough(), stdout, stderr },
    );
    const text = Buffer.concat(chunks).toString('utf8');
    expect(code).to.equal(4);
    // a terminal: one stream (stderr comes through stdout), its lines ended as a terminal ends them, its size the
    // caller's (a resize once the exec has started: the command waits for it)
    expect(text.split('\r\n').filter(Boolean)).to.deep.equal(['is-a-tty', 'to-stderr', '45 123']);
    expect(errBytes).to.equal(0);
  });

  it('berth cp both ways as docker cp; a container link is never followed on the host, a link planted at the destination is refused', async function () {
    await sb.write('a.yaml', running('a'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    // in: a file, a folder (with a link, copied as a link)
    await fs.writeFile(path.join(host, 'f.txt'), 'one\n');
    await fs.mkdir(path.join(host, 'dir', 'sub'), { recursive: true });
    await fs.writeFile(path.join(host, 'dir', 'sub', 'g.txt'), 'two\n');
    await fs.symlink('sub/g.txt', path.join(host, 'dir', 'ln'));
    expect((await bcp(sb, path.join(host, 'f.txt'), 'a:/workspace/f.txt')).code).to.equal(0);
    expect((await bcp(sb, path.join(host, 'dir'), 'a:/workspace')).code).to.equal(0);
    const seen = await bexec(sb, 'a', ['sh', '-c', 'cat /workspace/f.txt /workspace/dir/sub/g.txt; readlink /workspace/dir/ln']);
    expect(seen.stdout).to.equal('one\ntwo\nsub/g.txt\n');
    // out: a folder whose link points at a host folder: written as a link, nothing through it
    const target = path.join(host, 'target');
    await fs.mkdir(target);
    await bexec(sb, 'a', ['sh', '-c', `mkdir -p /workspace/out && echo x > /workspace/out/x && ln -s ${target} /workspace/out/l`]);
    expect((await bcp(sb, 'a:/workspace/out', path.join(host, 'got'))).code).to.equal(0);
    expect(await fs.readFile(path.join(host, 'got', 'x'), 'utf8')).to.equal('x\n');
    expect(await fs.readlink(path.join(host, 'got', 'l'))).to.equal(target);
    expect(await fs.readdir(target)).to.deep.equal([]);
    // `SRC/.`: the folder's contents into an existing folder
    await fs.mkdir(path.join(host, 'into'));
    expect((await bcp(sb, 'a:/workspace/out/.', path.join(host, 'into'))).code).to.equal(0);
    expect((await fs.readdir(path.join(host, 'into'))).sort()).to.deep.equal(['l', 'x']);
    // a destination that is a link planted there is refused, never followed
    await fs.symlink(target, path.join(host, 'planted'));
    const refused = await bcp(sb, 'a:/workspace/out/x', path.join(host, 'planted'));
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/is a symbolic link; berth never follows one/);
    expect(await fs.readdir(target)).to.deep.equal([]);
    // a path that climbs is refused; a missing one named
    const climbs = await bcp(sb, 'a:/workspace/../etc/passwd', path.join(host, 'p')).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(climbs).to.be.instanceOf(UsageError);
    expect((await bcp(sb, 'a:/nope', path.join(host, 'p'))).stderr).to.match(/no such file or folder in the container/);
  });

  it('a sandbox runs nothing of its image (an image with no shell), is driven by exec and cp, and ends at its release with its exit code: harvest, workspace export, grade; touched shown everywhere', async function () {
    // an image with no shell, nothing at all: berth's own process keeps its container alive
    const ctxDir = path.join(host, 'noshell');
    await fs.mkdir(ctxDir);
    await fs.writeFile(path.join(ctxDir, 'Dockerfile'), `FROM scratch\nLABEL ${TEST_LABEL}=${TEST_RUN}\nWORKDIR /workspace\n`);
    const image = `berth-test/noshell:${TEST_RUN}`;
    await run('docker', ['build', '-q', '-t', image, ctxDir]);
    try {
      await sb.write('bare.yaml', sandbox('bare').replace('berth/busybox:local', image));
      await sb.write(
        'graded.yaml',
        sandbox('graded', `  grade:\n    image: berth/busybox:local\n    command: [sh, -c, 'test "$(cat /workspace/answer.txt)" = 42']\n`) +
          "  network: {mode: isolated, egress: ['example.com:443']}\n  resources: {disk: 64Mi}\n",
      );
      await sb.write('clean.yaml', sb.attempt('clean', 'echo 42 > /workspace/answer.txt'));
      await sb.write('failing.yaml', sandbox('failing'));
      expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
      expect((await sb.status('bare'))?.phase).to.equal('Running');
      // cp into the shell-less one works through the archive API; an exec has nothing to run there
      await fs.writeFile(path.join(host, 'answer.txt'), '42\n');
      expect((await bcp(sb, path.join(host, 'answer.txt'), 'bare:/workspace/answer.txt')).code).to.equal(0);
      // the graded one: driven by exec
      const w = await bexec(sb, 'graded', ['sh', '-c', 'echo 42 > /workspace/answer.txt; echo "proxy $HTTPS_PROXY"; ps -o args']);
      expect(w.code).to.equal(0);
      // on its isolated network, its way out through berth's egress proxy, as any attempt's
      expect(w.stdout).to.include('proxy http://egress-proxy:3128');
      expect(w.stdout).to.include(`${EXEC.helperPath} pause`);
      // released: as an exit with that code; the clean attempt runs beside, untouched
      expect((await sb.cli('release', 'bare')).code).to.equal(0);
      expect((await sb.cli('release', 'graded', '--exit-code', '0')).code).to.equal(0);
      expect((await sb.cli('release', 'failing', '--exit-code', '3')).code).to.equal(0);
      const again = await sb.cli('release', 'failing');
      expect(again.code).to.equal(1);
      expect(again.stderr).to.match(/not Running: only a running sandbox is released/);
      expect((await sb.cli('release', 'clean')).stderr).to.match(/no sandbox|is Succeeded|not Running/);
      const fin = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60s');
      expect(fin.code, fin.stderr).to.equal(3);
      expect(fin.stdout).to.match(/, 2 touched by hand \(bare, graded\)\n$/);
      const bare = await sb.status('bare');
      expect([bare?.phase, bare?.exitCode, bare?.touched?.copies]).to.deep.equal(['Succeeded', 0, 1]);
      const failing = await sb.status('failing');
      expect([failing?.phase, failing?.reason, failing?.exitCode, failing?.touched]).to.deep.equal(['Failed', 'Error', 3, undefined]);
      const graded = await sb.status('graded');
      expect(graded?.grades?.at(-1)).to.include({ state: 'graded', passed: true });
      expect(graded?.touched).to.include({ execs: 1, copies: 0 });
      const changes = JSON.parse(await fs.readFile(path.join(sb.resultsRoot, 'bare', 'run-1', 'workspace', 'changes.json'), 'utf8')) as {
        added: { path: string }[];
      };
      expect(changes.added.map((a) => a.path)).to.deep.equal(['answer.txt']);
      // touched, everywhere a result is shown; the clean one nowhere
      const status = JSON.parse(await fs.readFile(path.join(sb.resultsRoot, 'graded', 'run-1', 'status.json'), 'utf8')) as { touched?: unknown };
      expect(status.touched).to.include({ execs: 1 });
      const wide = (await sb.cli('get', '-o', 'wide')).stdout.split('\n');
      expect(wide[0]).to.match(/TOUCHED/);
      expect(wide.find((l) => l.startsWith('graded '))).to.match(/1 exec/);
      expect(wide.find((l) => l.startsWith('clean '))).to.not.match(/ \d+ (execs?|cop(y|ies))\b/);
      const item = JSON.parse((await sb.cli('get', 'graded', '-o', 'json')).stdout) as { status: { touched?: { execs: number } } };
      expect(item.status.touched?.execs).to.equal(1);
      expect((await sb.cli('describe', 'graded')).stdout).to.match(/Touched:\s+YES: 1 exec/);
      expect((await sb.cli('describe', 'clean')).stdout).to.match(/Touched:\s+no/);
      const sum = await sb.cli('summary');
      expect(sum.stdout).to.match(/TOUCHED: 2 of 4/);
      const sumJson = JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as {
        attempts: { touched: number; children: { name: string; touched: unknown }[] };
      };
      expect(sumJson.attempts.touched).to.equal(2);
      expect(sumJson.attempts.children.find((c) => c.name === 'clean')?.touched).to.equal(null);
      const junit = (await sb.cli('summary', '-o', 'junit')).stdout;
      expect(junit).to.match(/name="graded"[^\n]*>\n\s*<properties><property name="berth.touched" value="1 execs, 0 copies"\/>/);
      expect(junit).to.match(/name="clean"[^\n]*\/>\n/);
      const md = (await sb.cli('summary', '-o', 'markdown')).stdout;
      expect(md).to.match(/### Touched by hand[\s\S]*\| graded \| attempts \(in no set\) \| passed \| 1 \| 0 \|/);
      expect(md).not.to.match(/\| clean \| attempts/);
      const waited = await sb.cli('wait', 'graded', 'clean');
      expect(waited.stdout).to.match(/1 touched by hand \(graded\)\n$/);
      const report = await sb.cli('report', '-o', '-');
      expect(report.stdout).to.match(/TOUCHED: 1 exec/);
      expect(report.stdout).to.match(/touched \(berth exec, cp, the API\)/);
    } finally {
      await sb.cli('clean');
      await run('docker', ['rmi', '-f', image]).catch(() => undefined);
    }
  });

  it('a touched run shows so while it runs (counted from its run folder), and a sandbox at its deadline ends TimedOut', async function () {
    await sb.write('s.yaml', sandbox('s').replace('deadlineSeconds: 300', 'deadlineSeconds: 4'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    expect((await bexec(sb, 's', ['true'])).code).to.equal(0);
    expect((await sb.cli('get', '-o', 'wide')).stdout).to.match(/Running .* 1 exec /);
    expect((await sb.cli('describe', 's')).stdout).to.match(/Touched:\s+YES: 1 exec/);
    const fin = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60s');
    expect(fin.code).to.equal(3);
    const s = await sb.status('s');
    expect([s?.phase, s?.reason, s?.touched?.execs]).to.deep.equal(['TimedOut', 'DeadlineExceeded', 1]);
  });
});
