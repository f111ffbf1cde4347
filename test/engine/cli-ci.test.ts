/**
 * CI niceties as a user meets them (the built CLI; `make test` builds dist/ first): spec errors as
 * GitHub Actions annotations when GITHUB_ACTIONS=true (validate, plan, reconcile); the progress of
 * `reconcile --once --wait` on a real terminal (a pty, util-linux `script`): done/total, an
 * estimate, colour, and none of it with NO_COLOR; through a pipe, one plain line per change.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { bufferIo } from '../../src/cli/io';
import { makeContext } from '../../src/cli/context';
import { runReconcile } from '../../src/cli/commands/reconcile';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

function cleanEnv(over: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BERTH_') && k !== 'GITHUB_ACTIONS' && k !== 'NO_COLOR'));
  return { ...env, TERM: 'xterm', ...over };
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** `berth ...args` in `cwd`, on a terminal: util-linux script gives it a pty; what the terminal showed. */
function onTerminal(cwd: string, args: string[], env: Record<string, string> = {}) {
  const cmd = [process.execPath, BIN, ...args].map(quote).join(' ');
  const r = spawnSync('script', ['-q', '-e', '-c', cmd, '/dev/null'], { cwd, env: cleanEnv(env), encoding: 'utf8', timeout: 90_000 });
  return { code: r.status, out: r.stdout };
}

function piped(cwd: string, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env: cleanEnv(env), encoding: 'utf8', timeout: 90_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('CI niceties (built CLI, real engine, a pty)', function () {
  this.timeout(180_000);
  before(requireEngine);
  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('ci');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('GITHUB_ACTIONS=true: validate, plan and reconcile also print each spec error as an ::error annotation on its line', async function () {
    await sb.write('bad.yaml', `${sb.attempt('bad', 'true')}  memory: 1\n`);
    await sb.write('ok.yaml', sb.attempt('ok', 'true'));
    const env = { GITHUB_ACTIONS: 'true', GITHUB_WORKSPACE: sb.dir };
    const annotation = /^::error file=specs\/bad\.yaml,line=8,col=3,title=berth%3A schema at spec\.memory::spec\.memory: unknown field "memory"/m;
    const v = piped(sb.dir, ['validate'], env);
    expect(v.code).to.equal(2);
    expect(v.stderr).to.match(annotation);
    const plan = piped(sb.dir, ['plan', ...sb.globalArgs()], env);
    expect(plan.stderr).to.match(annotation);
    const rec = piped(sb.dir, ['reconcile', '--once', ...sb.globalArgs()], env);
    expect(rec.stderr).to.match(annotation);
    // not in GitHub Actions: no annotation
    expect(piped(sb.dir, ['validate']).stderr).to.not.contain('::error');
  });

  it('reconcile --once --wait on a terminal: done/total redrawn in place, an estimate once one is done, colour; NO_COLOR turns colour off; a pipe gets one plain line per change', async function () {
    await sb.write('quick.yaml', sb.attempt('quick', 'true'));
    await sb.write('slow.yaml', sb.attempt('slow', 'sleep 3'));
    const tty = onTerminal(sb.dir, ['reconcile', '--once', '--wait', ...sb.globalArgs(), '--log-level', 'warn']);
    expect(tty.code, tty.out).to.equal(0);
    expect(tty.out).to.contain('\r\x1b[K[');
    expect(tty.out).to.match(
      // eslint-disable-next-line no-control-regex
      /\[\d+s\] 1\/2 done: \x1b\[32m1 passed\x1b\[0m; 1 Running · (about \d+s left|longer than the pace so far: \d+s since one settled)/,
    );
    // eslint-disable-next-line no-control-regex
    expect(tty.out).to.match(/\[\d+s\] 2\/2 done: \x1b\[32m2 passed\x1b\[0m/);

    // the estimate needed a run still going; the rest does not: slow is quick from here on (its spec changed: a new run)
    await sb.write('slow.yaml', sb.attempt('slow', 'true'));
    await sb.cli('rerun', 'quick');
    const plain = onTerminal(sb.dir, ['reconcile', '--once', '--wait', ...sb.globalArgs(), '--log-level', 'warn'], { NO_COLOR: '1' });
    expect(plain.code, plain.out).to.equal(0);
    expect(plain.out)
      .to.contain('\r\x1b[K[')
      // eslint-disable-next-line no-control-regex
      .and.to.not.match(/\x1b\[3\dm/);

    await sb.cli('rerun', 'quick', 'slow');
    const pipe = piped(sb.dir, ['reconcile', '--once', '--wait', ...sb.globalArgs(), '--log-level', 'warn']);
    expect(pipe.code, pipe.stderr).to.equal(0);
    expect(pipe.stderr).to.not.contain('\x1b').and.to.not.contain('\r').and.to.not.contain('left');
    const lines = pipe.stderr
      .trimEnd()
      .split('\n')
      .filter((l) => /^\[\d+s\] /.test(l));
    const states = lines.map((l) => l.replace(/^\[\d+s\] /, ''));
    expect(new Set(states).size, 'one line per change').to.equal(states.length);
    expect(states.at(-1)).to.equal('2/2 done: 2 passed');
  });

  it('off a terminal, a long attempt is not silence: the unchanged line is written again at each heartbeat', async function () {
    await sb.write('long.yaml', sb.attempt('long', 'sleep 4'));
    const io = bufferIo();
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance, logLevel: 'warn' }, io, {
      engine: sb.engine,
    });
    const code = await runReconcile(ctx, { once: true, wait: true, progressHeartbeatMs: 1000 });
    expect(code, io.stderr).to.equal(0);
    const running = io.stderr.split('\n').filter((l) => /^\[\d+s\] 0\/1 done; 1 Running$/.test(l));
    expect(running.length, io.stderr).to.be.greaterThan(1);
    const secs = running.map((l) => Number(/^\[(\d+)s\]/.exec(l)?.[1]));
    expect([...secs].sort((a, b) => a - b)).to.deep.equal(secs);
  });
});
