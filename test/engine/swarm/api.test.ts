/**
 * The HTTP API and sandboxes on a real two-node swarm (test/support/swarm.ts): the controller
 * runs with `--backend swarm` and serves its socket; two sandboxes land on the two nodes (berth
 * places the second on the node with fewer runs), each driven through the API on its own node:
 * an exec's output and exit code, an exec past its timeout killed in the container (124), a file
 * written and read back. A sandbox's task runs berth's helper (put into a volume of its run before
 * the node starts it), nothing of the image. Released (one through the API with 0, one by `berth
 * release --exit-code 2`), each ends with the release's exit code, touched, its workspace exported
 * from its node and graded; a third ends at its deadline (TimedOut). Clean leaves nothing.
 */
import { promises as fs } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { expect } from 'chai';
import Dockerode from 'dockerode';
import { apiSocketPath } from '../../../src/api/server';
import { createSwarmBackend } from '../../../src/backend/swarm';
import { parseRunId } from '../../../src/backend/swarm/nodes';
import { EXEC } from '../../../src/constants';
import type { AttemptStatus } from '../../../src/status/types';
import { startController, type RunningController } from '../../support/controller';
import { Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm, swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { waitFor } from '../../support/wait';

interface Answer {
  status: number;
  body: Buffer;
  json(): Record<string, unknown>;
}

function request(socket: string, method: string, p: string, body?: Buffer | string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = typeof body === 'string' ? { 'content-type': 'application/json' } : {};
    const req = http.request({ socketPath: socket, method, path: p, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const b = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, body: b, json: () => JSON.parse(b.toString('utf8')) as Record<string, unknown> });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const sandbox = (name: string, extra = '', deadline = 600) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  sandbox: true\n  deadlineSeconds: ${deadline}\n${extra}`;

describe('--backend swarm: the HTTP API and sandboxes (real two-node swarm)', function () {
  this.timeout(400_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it('sandboxes on both nodes, driven through the API (exec, timeout, files), released with their exit codes, exported, graded, touched; a deadline ends one', async () => {
    const sb = await Sandbox.create('sw-api');
    let ctl: RunningController | undefined;
    const seen = (names: string[]) => Promise.all(names.map(async (n) => [n, await sb.status(n)] as const));
    try {
      const backend = createSwarmBackend({ docker: new Dockerode({ socketPath: s.manager.socket }), env: { ...process.env, DOCKER_HOST: s.manager.address } });
      await sb.write('a.yaml', sandbox('a', `  grade:\n    image: berth/busybox:local\n    command: [sh, -c, 'test "$(cat /workspace/answer.txt)" = 42']\n`));
      ctl = startController(sb, {}, backend);
      const socket = apiSocketPath(sb.stateDir, sb.instance);
      const running = async (name: string) => {
        let last: unknown;
        await waitFor(
          `${name} Running on the swarm`,
          async () => {
            const st = await sb.status(name);
            last = [st?.phase, st?.reason, st?.message];
            return st?.phase === 'Running' && !!(await fs.stat(socket).catch(() => undefined));
          },
          { instance: sb.instance, timeoutMs: 120_000 },
        ).catch((err: Error) => {
          throw new Error(`${err.message}: ${JSON.stringify(last)}`);
        });
        return (await sb.status(name)) as AttemptStatus;
      };
      // one at a time: the second goes to the node with fewer runs, the other one
      const a = await running('a');
      await sb.write('b.yaml', sandbox('b'));
      const b = await running('b');
      const nodeOf = (st: AttemptStatus) => parseRunId(st.containerId as string).node;
      expect([nodeOf(a), nodeOf(b)].sort()).to.deep.equal(s.nodes.map((n) => n.id).sort());
      // a third, ended by its deadline
      await sb.write('c.yaml', sandbox('c', '', 15));

      const exec = (name: string, body: unknown) => request(socket, 'POST', `/v1/attempts/${name}/exec`, JSON.stringify(body));
      for (const name of ['a', 'b']) {
        const out = await exec(name, { cmd: ['sh', '-c', 'echo "out $X"; echo err >&2; exit 3'], env: { X: name } });
        expect([out.status, out.json()], name).to.deep.equal([200, { exitCode: 3, stdout: `out ${name}\n`, stderr: 'err\n', truncated: false }]);
        // the task's main process is berth's helper, nothing of the image
        const ps = await exec(name, { cmd: ['ps', '-o', 'pid,args'] });
        expect(ps.json().stdout, name).to.match(new RegExp(`^\\s*\\d+\\s+${EXEC.helperPath} pause$`, 'm'));
        // past its timeout: killed in the container, 124
        const slow = await exec(name, { cmd: ['sh', '-c', 'sleep 321 & wait'], timeout: 1 });
        expect(slow.json(), name).to.include({ exitCode: 124, timedOut: true, killed: true });
        const left = await exec(name, { cmd: ['ps', '-o', 'args'] });
        expect(left.json().stdout, name).to.not.match(/sleep 321/);
        // a file written, then read back, through the task's node
        const bytes = Buffer.from(name === 'a' ? '42\n' : 'written through the API\n');
        const put = await request(socket, 'PUT', `/v1/attempts/${name}/files?path=/workspace/answer.txt`, bytes);
        expect(put.status, put.body.toString()).to.equal(201);
        const got = await request(socket, 'GET', `/v1/attempts/${name}/files?path=/workspace/answer.txt`);
        expect([got.status, got.body.toString()], name).to.deep.equal([200, bytes.toString()]);
        const cat = await exec(name, { cmd: ['cat', 'answer.txt'] });
        expect(cat.json().stdout, name).to.equal(bytes.toString());
        const item = await request(socket, 'GET', `/v1/attempts/${name}`);
        expect((item.json().status as { phase: string }).phase).to.equal('Running');
      }

      // released: a through the API with 0, b by the command with 2 (the controller carries it out)
      const rel = await request(socket, 'POST', '/v1/attempts/a/release', JSON.stringify({ exitCode: 0 }));
      expect([rel.status, rel.json().released], rel.body.toString()).to.deep.equal([200, true]);
      const relB = await swarmCli(sb, s, 'release', 'b', '--exit-code', '2');
      expect(relB.code, relB.stderr).to.equal(0);
      let last: unknown;
      await waitFor(
        'a graded, b Failed, c TimedOut',
        async () => {
          const all = await seen(['a', 'b', 'c']);
          last = all.map(([n, st]) => [n, st?.phase, st?.reason, st?.exitCode, st?.grades?.at(-1)?.state]);
          const [sa, sbb, sc] = all.map(([, st]) => st);
          return sa?.grades?.at(-1)?.state === 'graded' && sbb?.phase === 'Failed' && sc?.phase === 'TimedOut';
        },
        { instance: sb.instance, timeoutMs: 180_000 },
      ).catch((err: Error) => {
        throw new Error(`${err.message}: ${JSON.stringify(last)}`);
      });
      const [fa, fb, fc] = (await seen(['a', 'b', 'c'])).map(([, st]) => st) as [AttemptStatus, AttemptStatus, AttemptStatus];
      expect([fa.phase, fa.exitCode], JSON.stringify(fa)).to.deep.equal(['Succeeded', 0]);
      expect(fa.grades?.at(-1)).to.include({ state: 'graded', passed: true });
      expect([fb.phase, fb.reason, fb.exitCode]).to.deep.equal(['Failed', 'Error', 2]);
      expect([fc.phase, fc.reason]).to.deep.equal(['TimedOut', 'DeadlineExceeded']);
      // touched: 5 execs and 2 copies each, all recorded by the API
      for (const st of [fa, fb]) {
        expect(st.touched, st.name).to.include({ execs: 5, copies: 2 });
        const runDir = path.dirname(st.resultsDir as string);
        const lines = (await fs.readFile(path.join(runDir, EXEC.record), 'utf8'))
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { event: string; by?: string; timedOut?: boolean; killed?: boolean });
        expect(lines.filter((l) => l.event === 'begin').map((l) => l.by)).to.deep.equal(Array(7).fill('api'));
        expect(lines.filter((l) => l.event === 'end' && l.timedOut))
          .to.have.length(1)
          .and.to.have.nested.property('[0].killed', true);
        // the workspace came home from the sandbox's node: the file the API wrote
        const changes = JSON.parse(await fs.readFile(path.join(runDir, 'workspace', 'changes.json'), 'utf8')) as { added: { path: string }[] };
        expect(changes.added.map((x) => x.path)).to.deep.equal(['answer.txt']);
      }
      expect((await sb.cli('get', '-o', 'wide')).stdout.split('\n').find((l) => l.startsWith('a '))).to.match(/5 execs, 2 copies/);
      // ended: refused with its phase named
      const late = await exec('a', { cmd: ['true'] });
      expect(late.status).to.equal(409);
      expect(late.json().error).to.match(/not Running/);
    } finally {
      await ctl?.stop();
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await nothingLeftOnSwarm(s, sb.instance);
      await sb.dispose();
    }
  });
});
