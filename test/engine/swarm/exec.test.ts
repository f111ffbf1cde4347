/**
 * berth exec, berth cp and sandboxes on a real two-node swarm (test/support/swarm.ts): the
 * commands reach a run's task container through its node's engine (touch/target.ts, as the
 * sidecars' ready command does): an exec's output and exit code, a copy in and out, the run
 * touched and its workspace home; clean leaves nothing on the swarm. Sandboxes and the API on a
 * swarm: api.test.ts.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { runExec } from '../../../src/cli/commands/exec';
import { makeContext } from '../../../src/cli/context';
import { bufferIo } from '../../../src/cli/io';
import { silentLogger } from '../../../src/util/log';
import type { AttemptStatus } from '../../../src/status/types';
import { Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm, swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { waitFor } from '../../support/wait';

/** `berth exec NAME -- CMD` with `--backend swarm` against the swarm's manager (runExec with streams of its own, as test/engine/exec.test.ts). */
async function swarmExec(sb: Sandbox, s: TestSwarm, name: string, ...cmd: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return swarmExecWith(sb, s, name, cmd, {});
}

async function swarmExecWith(
  sb: Sandbox,
  s: TestSwarm,
  name: string,
  cmd: string[],
  o: Parameters<typeof runExec>[3],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const before = process.env.DOCKER_HOST;
  process.env.DOCKER_HOST = s.manager.address;
  try {
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance, backend: 'swarm' }, bufferIo(), {
      log: silentLogger(),
    });
    const streams = { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough() };
    const text = (st: PassThrough) => {
      const chunks: Buffer[] = [];
      st.on('data', (c: Buffer) => chunks.push(c));
      return () => Buffer.concat(chunks).toString('utf8');
    };
    const [out, err] = [text(streams.stdout), text(streams.stderr)];
    const code = await runExec(ctx, name, cmd, o, streams);
    return { code, stdout: out(), stderr: err() };
  } finally {
    if (before === undefined) delete process.env.DOCKER_HOST;
    else process.env.DOCKER_HOST = before;
  }
}

const spec = (name: string, body: string) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  deadlineSeconds: 300\n${body}`;

describe('--backend swarm: exec and cp through the node’s engine (real two-node swarm)', function () {
  this.timeout(300_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it('exec and cp reach the task container on its node, the run is touched', async () => {
    const sb = await Sandbox.create('sw-exec');
    try {
      await sb.write('w.yaml', spec('w', "  command: [sh, -c, 'while [ ! -f /workspace/done ]; do sleep 0.2; done']\n"));
      let seen: unknown;
      await waitFor(
        'w Running on the swarm',
        async () => {
          const r = await swarmCli(sb, s, 'reconcile', '--once');
          expect(r.code, r.stderr).to.equal(0);
          const w = await sb.status('w');
          seen = [w?.phase, w?.reason, w?.message];
          return w?.phase === 'Running' || undefined;
        },
        { instance: sb.instance, timeoutMs: 120_000 },
      ).catch((err: Error) => {
        throw new Error(`${err.message}: ${JSON.stringify(seen)}`);
      });
      const ex = await swarmExec(sb, s, 'w', 'sh', '-c', 'echo "on $(hostname)"; echo err >&2; exit 3');
      expect([ex.code, ex.stderr.trim()]).to.deep.equal([3, 'err']);
      expect(ex.stdout).to.match(/^on \S+\n$/);
      // past --timeout: killed in the task's container by berth's helper, copied into it through its node's engine first (124)
      const slow = await swarmExecWith(sb, s, 'w', ['sh', '-c', 'sleep 321 & wait'], { timeout: 1000 });
      expect(slow.code, slow.stderr).to.equal(124);
      expect((await swarmExec(sb, s, 'w', 'ps', '-o', 'args')).stdout).to.not.match(/sleep 321/);
      // a copy in, read back by exec, and out again
      const src = path.join(sb.dir, 'in.txt');
      await fs.writeFile(src, 'copied through the node\n');
      const cin = await swarmCli(sb, s, 'cp', src, 'w:/workspace/in.txt');
      expect(cin.code, cin.stderr).to.equal(0);
      expect((await swarmExec(sb, s, 'w', 'cat', '/workspace/in.txt')).stdout).to.equal('copied through the node\n');
      const dest = path.join(sb.dir, 'out.txt');
      const cout = await swarmCli(sb, s, 'cp', 'w:/workspace/in.txt', dest);
      expect(cout.code, cout.stderr).to.equal(0);
      expect(await fs.readFile(dest, 'utf8')).to.equal('copied through the node\n');
      expect((await swarmExec(sb, s, 'w', 'touch', '/workspace/done')).code).to.equal(0);
      const done = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '120s');
      const w = (await sb.status('w')) as AttemptStatus;
      expect(done.code, `${done.stderr}\n${JSON.stringify(w, null, 1)}`).to.equal(0);
      expect([w.phase, w.exitCode]).to.deep.equal(['Succeeded', 0]);
      expect(w.touched).to.include({ execs: 5, copies: 2 });
      const wide = (await sb.cli('get', '-o', 'wide')).stdout.split('\n');
      expect(wide.find((l) => l.startsWith('w '))).to.match(/5 execs, 2 copies/);
      // the copy came home with the workspace from the task's node
      const runDir = path.dirname(w.resultsDir as string);
      expect(await fs.readFile(path.join(runDir, 'workspace', 'files', 'in.txt'), 'utf8')).to.equal('copied through the node\n');
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await nothingLeftOnSwarm(s, sb.instance);
      await sb.dispose();
    }
  });
});
