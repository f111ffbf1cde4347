/**
 * A newcomer's first day (issue 54): the README's walk through `make run`'s example specs with the
 * built CLI, at the default log level, as a user types it (the sandbox's state folder, results
 * root and instance come from BERTH_* so every command stays as the README writes it). Every line
 * any command prints is checked for what misled before: a count whose noun is not plural, a
 * batch id or call count in a log line, a header that names one column twice, a phase where an
 * outcome is meant; and the numbers each command gives agree with summary -o json's.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const REPO = path.resolve(__dirname, '..', '..');
const BIN = path.join(REPO, 'bin', 'berth.js');

interface Said {
  cmd: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

describe("a newcomer's first day: make run's specs through the README's commands (real engine)", function () {
  this.timeout(240_000);
  before(requireEngine);
  let sb: Sandbox;
  const said: Said[] = [];
  before(async function () {
    sb = await Sandbox.create('day1');
    await fs.rm(sb.specsDir, { recursive: true, force: true });
    await fs.cp(path.join(REPO, 'specs'), sb.specsDir, { recursive: true });
  });
  after(async function () {
    await sb?.destroy();
  });

  /** `berth ...args` as the user runs it from the folder holding specs/: the built CLI, no flags of the sandbox's. */
  function berth(...args: string[]): Promise<Said> {
    const env: NodeJS.ProcessEnv = { ...process.env, BERTH_STATE: sb.stateDir, BERTH_RESULTS_ROOT: sb.resultsRoot, BERTH_INSTANCE: sb.instance };
    for (const k of ['BERTH_SPECS', 'BERTH_LOG_LEVEL', 'BERTH_LOG_FORMAT', 'BERTH_NO_HEADERS', 'NO_COLOR', 'GITHUB_ACTIONS']) delete env[k];
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: path.dirname(sb.specsDir), env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('error', reject);
      child.on('close', (code) => {
        const s = { cmd: `berth ${args.join(' ')}`, code, stdout, stderr };
        said.push(s);
        resolve(s);
      });
    });
  }

  it('every command says what is so, once, in words that agree', async function () {
    const validate = await berth('validate');
    expect([validate.code, validate.stderr], validate.stdout).to.deep.equal([0, '']);
    const planned = await berth('plan');
    expect(planned.code, planned.stderr).to.equal(0);
    const planJson = JSON.parse((await berth('plan', '-o', 'json')).stdout) as { actions: unknown[]; unchanged: Record<string, unknown> };
    // plan's text counts each attempt once, as its JSON does
    expect(planned.stdout).to.match(
      new RegExp(`^Plan: ${planJson.actions.length} attempts to change \\(\\d+ operations\\), ${Object.keys(planJson.unchanged).length} unchanged\\.$`, 'm'),
    );
    expect(planJson.actions).to.have.length(11);

    // make run
    const run = await berth('reconcile', '--once', '--wait', '--fail-on', 'infra');
    expect(run.code, run.stderr).to.equal(0);
    const summary = JSON.parse((await berth('summary', '-o', 'json')).stdout) as {
      attempts: { passed: number; failed: number; infra: number };
      sets: { passed: number; failed: number; infra: number }[];
    };
    const count = (k: 'passed' | 'failed' | 'infra') => summary.attempts[k] + summary.sets.reduce((n, x) => n + x[k], 0);
    const [passed, failed, infra] = [count('passed'), count('failed'), count('infra')];
    // the example set's m2 fails a task by its score, as an eval does
    expect([passed + failed + infra, failed, infra]).to.deep.equal([11, 1, 0]);
    // the end line and wait count outcomes as summary does; the failed attempt is named by its outcome, not its phase
    expect(run.stdout.trim().split('\n').at(-1)).to.equal(`${passed} passed, ${failed} failed, ${infra} infrastructure`);
    const waited = await berth('wait', '--fail-on', 'infra');
    expect(waited.code, waited.stderr).to.equal(0);
    expect(waited.stdout + waited.stderr).to.contain(`${passed} passed, ${failed} failed`);
    expect(waited.stdout + waited.stderr).to.match(/failed \(score 0\)/);
    expect(waited.stdout + waited.stderr).not.to.match(/eval-demo\S* ended Succeeded/);

    const get = await berth('get');
    expect(get.code).to.equal(0);
    const sets = await berth('get', '--sets');
    const wide = await berth('get', '--sets', '-o', 'wide');
    for (const t of [get, sets, wide]) {
      const head = (t.stdout.split('\n')[0] ?? '').split(/\s{2,}/);
      expect(new Set(head).size, `${t.cmd}: ${head.join(' | ')}`).to.equal(head.length);
    }
    expect(sets.stdout).to.match(/^eval-demo\s+.*\b3\s+1\b/m);
    const described = await berth('describe', 'hello');
    expect(described.stdout).to.match(/^Events:/m);
    const logs = await berth('logs', 'hello');
    expect(logs.code, logs.stderr).to.equal(0);
    const report = await berth('report');
    expect(report.code, report.stderr).to.equal(0);
    expect(report.stdout + report.stderr).to.match(/report of 11 attempts/);
    const second = await berth('plan', '--detailed-exitcode');
    expect([second.code, second.stdout]).to.deep.include.members([0]);
    expect(second.stdout).to.match(/^No changes: 11 attempts as specified\./m);

    // what no line says, in any command's output
    const bad: [RegExp, string][] = [
      [/\b1 (attempts|runs|files|errors|children|sets)\b/, 'a singular count with a plural noun'],
      [/\b(reconcileId|calls)=/, "a batch's id or call count in a log line"],
      [/\bundefined\b|\bNaN\b|\[object Object\]/, 'a value that was never filled in'],
      [/about 1s left/, 'a frozen estimate'],
    ];
    for (const s of said) {
      for (const line of `${s.stdout}\n${s.stderr}`.split('\n')) {
        for (const [re, what] of bad) expect(re.test(line), `${s.cmd}: ${what}: ${JSON.stringify(line)}`).to.equal(false);
      }
    }
  });
});
