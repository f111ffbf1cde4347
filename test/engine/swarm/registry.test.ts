/**
 * Images from a real registry on a real two-node swarm, end to end (`reconcile --backend swarm`,
 * the contract's "Images from registries"): the registry (test/support/registry.ts: TLS with a CA
 * of the test's own, bcrypt htpasswd) listens in the swarm's own network, on an address of the
 * hub's bridge both nodes' engines reach (10.78.0.254: nothing leaves this machine), and the
 * nodes' engines trust it through /etc/docker/certs.d as the shared engine does.
 *
 *  - A private image, the credential in config.json (`auths`): four attempts that overlap run on
 *    both nodes, each node's engine pulled it from the registry itself (the access log names both
 *    addresses); the password is in no service or task config, no secret berth did not mean is
 *    made, no line of berth's output (at debug), no file berth wrote.
 *  - An image the registry does not hold, the credential from --registry-config: the attempt ends
 *    Blocked/ImagePullBackOff with berth's own "not found" message (exit 5 under --pull-retries 1).
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { LABELS, REASONS } from '../../../src/constants';
import { TEST_RUN } from '../../support/engine';
import { makeTestImage, removeImage, TestRegistry } from '../../support/registry';
import { type CliResult, Sandbox } from '../../support/sandbox';
import { needles } from '../../support/secret-needles';
import { nothingLeftOnSwarm } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';

const run = promisify(execFile);

/** The registry's address on the swarm's hub bridge (the nodes are 10.78.0.1, .2). */
const REGISTRY_IP = '10.78.0.254';

/** Every file under `dir` whose bytes hold one of `needles`. */
async function filesHolding(dir: string, ns: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const p = path.join(e.parentPath, e.name);
    const text = await fs.readFile(p, 'latin1');
    if (ns.some((n) => text.includes(n))) out.push(p);
  }
  return out;
}

const attempt = (name: string, image: string, cmd: string) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${name}}\nspec:\n  image: ${image}\n  network: {mode: none}\n  command: [sh, -c, '${cmd}']\n---\n`;

describe('--backend swarm: images from a real registry on a real two-node swarm', function () {
  this.timeout(300_000);
  let s: TestSwarm;
  let reg: TestRegistry;
  let home: string;
  const local = `berth-test/${TEST_RUN}-swreg:1`;
  let ref = '';

  before(async () => {
    s = await twoNodeSwarm();
    await run('nsenter', [`--net=/var/run/netns/${s.hub}`, 'sh', '-c', `ip addr add ${REGISTRY_IP}/24 dev br0 2>/dev/null || true`]);
    reg = await TestRegistry.start(undefined, { netns: s.hub, ip: REGISTRY_IP });
    await makeTestImage(local, 512 * 1024);
    ref = await reg.push(local, 'evals/swreg:1');
    await removeImage(local);
    home = await fs.mkdtemp(path.join(os.tmpdir(), `berth-swreg-${TEST_RUN}-`));
  });
  after(async () => {
    for (const n of s?.nodes ?? []) if (ref) await run('docker', ['-H', n.address, 'image', 'rm', '-f', ref]).catch(() => undefined);
    await removeImage(local);
    await reg?.stop();
    if (home) await fs.rm(home, { recursive: true, force: true });
  });

  /** The sandbox's CLI against the swarm's manager, with `env` set for the call (berth at debug: its every line is looked at). */
  async function cli(sb: Sandbox, env: Record<string, string>, ...args: string[]): Promise<CliResult> {
    const all = { DOCKER_HOST: s.manager.address, ...env };
    const was = Object.fromEntries(Object.keys(all).map((k) => [k, process.env[k]]));
    Object.assign(process.env, all);
    try {
      return await sb.cliWith({ '--log-level': 'debug' }, ...args, '--backend', 'swarm');
    } finally {
      for (const [k, v] of Object.entries(was))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  }

  it('a private image (config.json auths) runs on both nodes, each node pulling it itself; the password is in no service, task, secret, log line or file', async () => {
    const sb = await Sandbox.create('sw-reg');
    const pw = needles(reg.user.password);
    try {
      await fs.writeFile(path.join(home, 'config.json'), JSON.stringify({ auths: reg.authEntry() }), { mode: 0o600 });
      // four runs that overlap: berth places each on the node with the fewest of its runs
      await sb.write('a.yaml', ['r1', 'r2', 'r3', 'r4'].map((n) => attempt(n, ref, 'sleep 3; echo ran-$HOSTNAME')).join(''));
      for (const n of s.nodes)
        expect(
          await n.docker
            .getImage(ref)
            .inspect()
            .then(
              () => true,
              () => false,
            ),
          `node ${n.index} holds no copy yet`,
        ).to.equal(false);
      const m = s.manager.docker;
      const secretsBefore = new Set((await m.listSecrets()).map((x) => x.ID));
      const logBefore = (await reg.log()).length;

      // while the pass runs: every service and task of the instance, and every secret of the swarm, as the manager shows them
      const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] });
      const seen = { services: new Set<string>(), tasks: new Set<string>(), secrets: [] as string[], leaks: [] as string[] };
      let done = false;
      const watch = (async () => {
        while (!done) {
          const services = (await m.listServices({ filters: f } as object).catch(() => [])) as { ID: string; Spec: { Name: string } }[];
          for (const sv of services) {
            const full = await m
              .getService(sv.ID)
              .inspect()
              .catch(() => undefined);
            if (!full) continue;
            seen.services.add(sv.Spec.Name);
            if (pw.some((n) => JSON.stringify(full).includes(n))) seen.leaks.push(`service ${sv.Spec.Name}`);
            const tasks = (await m.listTasks({ filters: JSON.stringify({ service: [sv.ID] }) } as object).catch(() => [])) as { ID: string }[];
            for (const t of tasks) {
              seen.tasks.add(t.ID);
              if (pw.some((n) => JSON.stringify(t).includes(n))) seen.leaks.push(`task ${t.ID}`);
            }
          }
          for (const x of await m.listSecrets().catch(() => [])) if (!secretsBefore.has(x.ID)) seen.secrets.push(x.Spec?.Name ?? x.ID);
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      let r: CliResult;
      try {
        r = await cli(sb, { DOCKER_CONFIG: home }, 'reconcile', '--once', '--wait', '--timeout', '200', '--max-running', '4');
      } finally {
        done = true;
        await watch;
      }
      expect(r.code, r.stdout + r.stderr).to.equal(0);
      const nodes = new Set<string>();
      for (const n of ['r1', 'r2', 'r3', 'r4']) {
        const st = await sb.status(n);
        expect([st?.phase, st?.exitCode], `${n}: ${JSON.stringify(st)}`).to.deep.equal(['Succeeded', 0]);
        nodes.add((st?.containerId ?? '').split('@')[1] ?? '');
        expect(await fs.readFile(path.join(st?.resultsDir ?? '', '..', 'logs.txt'), 'utf8')).to.include('ran-');
      }
      expect([...nodes].sort(), 'the runs went to both nodes').to.deep.equal(s.nodes.map((n) => n.id).sort());

      // each node's engine holds the registry's image, pulled by itself (its repo digest; the registry saw both addresses)
      const digest = (await m.getImage(ref).inspect()).RepoDigests?.find((d) => d.startsWith(`${reg.host}/evals/swreg@`));
      expect(digest, 'the manager pulled it').to.be.a('string');
      for (const n of s.nodes) expect((await n.docker.getImage(ref).inspect()).RepoDigests, `node ${n.index}`).to.include(digest);
      const access = (await reg.log()).slice(logBefore);
      for (const n of s.nodes)
        expect(access, `node ${n.index} (${n.ip}) fetched the manifest itself`).to.match(
          new RegExp(`${n.ip.replace(/\./g, '\\.')}.*"GET /v2/evals/swreg/manifests/`),
        );
      expect((await sb.status('r1'))?.image?.repoDigests).to.include(digest);

      // the password: in no service or task the manager shows, no secret, no output line, no file berth wrote
      expect(seen.services.size, 'the services were seen while they ran').to.be.greaterThan(0);
      expect(seen.tasks.size).to.be.greaterThan(0);
      expect(seen.leaks).to.deep.equal([]);
      expect(seen.secrets, 'no secret was made for these runs (they have none): the credential is none').to.deep.equal([]);
      for (const out of [r.stdout, r.stderr]) for (const n of pw) expect(out.includes(n), 'berth output').to.equal(false);
      expect(r.stderr, 'berth logged at debug').to.match(/\S/);
      expect(await filesHolding(sb.dir, pw), 'files berth wrote').to.deep.equal([]);
      // nor the node engines' own logs
      for (const n of s.nodes) {
        const log = await fs.readFile(path.join(n.root, 'dockerd.log'), 'latin1');
        expect(log, `node ${n.index}: its log`).to.match(/\S/);
        for (const x of pw) expect(log.includes(x), `node ${n.index}: its dockerd.log`).to.equal(false);
      }
    } finally {
      const c = await cli(sb, {}, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });

  it('an image the registry does not hold (credential from --registry-config): Blocked/ImagePullBackOff with berth\'s own "not found", exit 5', async () => {
    const sb = await Sandbox.create('sw-reg404');
    try {
      const file = path.join(home, 'registries.json');
      await fs.writeFile(file, JSON.stringify({ auths: reg.authEntry() }), { mode: 0o600 });
      const missing = `${reg.host}/evals/nothere:1`;
      await sb.write('a.yaml', attempt('gone', missing, 'echo never'));
      const r = await cli(
        sb,
        { DOCKER_CONFIG: path.join(home, 'none') },
        'reconcile',
        '--once',
        '--wait',
        '--timeout',
        '120',
        '--pull-retries',
        '1',
        '--registry-config',
        file,
      );
      expect(r.code, r.stdout + r.stderr).to.equal(5);
      const st = await sb.status('gone');
      expect([st?.phase, st?.reason], JSON.stringify(st)).to.deep.equal(['Blocked', REASONS.imagePullBackOff]);
      expect(st?.message).to.contain(`not found: ${missing} is not in ${reg.host}`);
      expect(st?.message).to.contain('given up after 1 failed pulls');
      expect(st?.containerId, 'no run was made').to.equal(undefined);
      for (const n of needles(reg.user.password)) expect((r.stdout + r.stderr + JSON.stringify(st)).includes(n)).to.equal(false);
    } finally {
      const c = await cli(sb, {}, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });
});
