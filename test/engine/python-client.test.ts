/**
 * The Python client (integrations/python, standard library only) and its example agent loop, run
 * by the machine's python3 against a real berth: 20 sandboxes created from a template, each driven
 * through its tool calls (execs and file writes), read back, released, graded and deleted. The same
 * calls are then replayed by hand with docker exec and docker cp on plain containers: the same
 * answers, the same files, the same verdicts.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { apiSocketPath } from '../../src/api/server';
import { startController, type RunningController } from '../support/controller';
import { requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const run = promisify(execFile);
const client = path.resolve(__dirname, '../../integrations/python');

type Call =
  { tool: 'write_file'; path: string; data: string } | { tool: 'exec'; cmd: string[]; cwd?: string; exitCode: number; stdout: string; stderr: string };
interface Result {
  name: string;
  calls: Call[];
  files: Record<string, string>;
  phase: string;
  outcome: string;
  touched?: { execs: number; copies: number };
}

/** The same calls on a plain container, by hand: what each exec answered, the files, the grader's verdict. */
async function byHand(r: Result, grader: string): Promise<{ answers: unknown[]; files: Record<string, string>; outcome: string }> {
  const name = `berth_${TEST_RUN}-py-hand-${r.name}`;
  await run('docker', ['run', '-d', '--name', name, '--label', `${TEST_LABEL}=${TEST_RUN}`, TEST_IMAGE, 'sleep', '600']);
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-py-hand-'));
  try {
    await run('docker', ['exec', name, 'mkdir', '-p', '/workspace']);
    const answers: unknown[] = [];
    for (const c of r.calls) {
      if (c.tool === 'write_file') {
        const f = path.join(tmp, path.basename(c.path));
        await fs.writeFile(f, c.data);
        await run('docker', ['cp', f, `${name}:${c.path}`]);
        continue;
      }
      const got = await run('docker', ['exec', ...(c.cwd ? ['-w', c.cwd] : []), name, ...c.cmd]).then(
        (o) => ({ exitCode: 0, stdout: o.stdout, stderr: o.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => ({ exitCode: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
      answers.push(got);
    }
    const files: Record<string, string> = {};
    for (const p of Object.keys(r.files)) {
      const { stdout } = await run('docker', ['exec', name, 'cat', p], { encoding: 'buffer' });
      files[p] = createHash('sha256').update(stdout).digest('hex');
    }
    const outcome = await run('docker', ['exec', name, 'sh', '-c', grader]).then(
      () => 'passed',
      () => 'failed',
    );
    return { answers, files, outcome };
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
    await run('docker', ['rm', '-f', name]);
  }
}

describe('the Python client and its example agent loop (python3, real engine)', function () {
  this.timeout(600_000);
  before(requireEngine);

  let sb: Sandbox;
  let ctl: RunningController;
  // Each step runs even when one before it (or the test) failed.
  after(async function () {
    const failed: unknown[] = [];
    for (const step of [() => ctl?.stop(), () => sb?.destroy()]) await Promise.resolve(step()).catch((err: unknown) => failed.push(err));
    const { stdout } = await run('docker', ['ps', '-aq', '--filter', `label=${TEST_LABEL}=${TEST_RUN}`, '--filter', `name=${TEST_RUN}-py-hand-`]);
    if (stdout.trim()) await run('docker', ['rm', '-f', ...stdout.trim().split('\n')]).catch((err: unknown) => failed.push(err));
    if (failed.length > 0) throw failed[0];
  });

  it('20 sandboxes driven by example_agent.py end as the same calls by hand with docker exec and docker cp end: same answers, files and verdicts', async function () {
    sb = await Sandbox.create('py');
    ctl = startController(sb);
    const socket = apiSocketPath(sb.stateDir, sb.instance);
    await waitFor('the API socket', async () => (await fs.stat(socket).catch(() => undefined)) !== undefined || undefined, { timeoutMs: 60_000 });
    const trace = path.join(sb.dir, 'trace.json');
    const out = await run('python3', ['example_agent.py', '--socket', socket, '--count', '20', '--prefix', 'py', '--trace', trace], {
      cwd: client,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' },
    });
    const { grader, results } = JSON.parse(await fs.readFile(trace, 'utf8')) as { grader: string; results: Result[] };
    expect(results.map((r) => r.name)).to.deep.equal(Array.from({ length: 20 }, (_, i) => `py${i}`));
    expect(out.stdout.trim().split('\n')).to.have.length(20);
    // berth's verdicts: even tasks solved, odd ones wrong; every run touched (3 execs, 3 files written and 3 read)
    expect(results.map((r) => [r.phase, r.outcome])).to.deep.equal(Array.from({ length: 20 }, (_, i) => ['Succeeded', i % 2 ? 'failed' : 'passed']));
    for (const r of results) expect(r.touched, r.name).to.include({ execs: 3, copies: 5 });
    // deleted by the loop (its cleanup): nothing of them left in the specs folder
    expect(await fs.readdir(path.join(sb.specsDir, 'berth-api')).catch(() => [])).to.deep.equal([]);
    // the same calls by hand, five containers at a time
    for (let i = 0; i < results.length; i += 5) {
      const batch = results.slice(i, i + 5);
      const hand = await Promise.all(batch.map((r) => byHand(r, grader)));
      batch.forEach((r, j) => {
        const h = hand[j]!;
        const execs = r.calls.filter((c) => c.tool === 'exec').map((c) => ({ exitCode: c.exitCode, stdout: c.stdout, stderr: c.stderr }));
        expect(h.answers, r.name).to.deep.equal(execs);
        expect(h.files, r.name).to.deep.equal(r.files);
        expect(h.outcome, r.name).to.equal(r.outcome);
      });
    }
  });
});
