/**
 * Damaged state and the one ownership rule, on the real engine: a damaged status record costs
 * only its own attempt's record (set aside, reported without its bytes, rebuilt from the
 * engine); `clean` needs no records and removes only what berth created; a container whose
 * berth labels come from its image is never taken for berth's, on any path (the sidecar's too).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { LABELS, networkName, sidecarName, volumeName } from '../../src/constants';
import { acquireEngineLock } from '../../src/status/engine-lock';
import { docker, requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN, testEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const SLEEP = 'sleep 300';
const MARKER = 'SECRET-MARKER-c0ffee';

async function containersOf(sb: Sandbox, attempt?: string): Promise<Dockerode.ContainerInfo[]> {
  const label = [`${LABELS.instance}=${sb.instance}`, ...(attempt ? [`${LABELS.attempt}=${attempt}`] : [])];
  return docker.listContainers({ all: true, filters: JSON.stringify({ label }) });
}

async function only(sb: Sandbox, attempt: string): Promise<Dockerode.ContainerInspectInfo> {
  const list = await containersOf(sb, attempt);
  expect(
    list.map((c) => c.Names),
    `containers of ${attempt}`,
  ).to.have.length(1);
  return docker.getContainer(list[0]?.Id ?? '').inspect();
}

/** An image committed from `from`: it carries every label `from` has, berth's included. */
async function commit(from: string, repo: string): Promise<string> {
  await docker.getContainer(from).commit({ repo, tag: TEST_RUN });
  return `${repo}:${TEST_RUN}`;
}

/** An image that carries instance `instance`'s berth labels for sidecar `tools` of attempt `attempt` (no nonce). */
async function labeledSidecarImage(instance: string, attempt: string): Promise<string> {
  const base = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'], Labels: { [TEST_LABEL]: TEST_RUN } });
  try {
    await base.commit({
      repo: 'berth-test/labeled-sc',
      tag: `${TEST_RUN}-${attempt}`,
      changes: [
        `LABEL ${LABELS.managed}=true ${LABELS.instance}=${instance} ${LABELS.attempt}=${attempt} ${LABELS.component}=sidecar ${LABELS.sidecar}=tools ${LABELS.run}=1`,
      ],
    });
  } finally {
    await base.remove({ force: true });
  }
  return `berth-test/labeled-sc:${TEST_RUN}-${attempt}`;
}

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

/** The built CLI (dist/; `make test` builds it) as a child process with the sandbox's flags: its own process, its real log on stderr. */
function berth(sb: Sandbox, ...args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args, ...sb.globalArgs()], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += String(c)));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

const WITH_TOOLS = '  network: {mode: isolated}\n  sidecars:\n    - {name: tools, image: berth/busybox:local, command: [sleep, "300"]}\n';

describe('damaged state and ownership (real engine)', function () {
  this.timeout(90_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('dmg');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('a garbage and a truncated record cost only their own records: set aside, reported without their bytes, rebuilt from the engine', async function () {
    await sb.write('run.yaml', sb.attempt('run', SLEEP));
    await sb.write('done.yaml', sb.attempt('done', 'echo ran >> /results/count'));
    await sb.write('other.yaml', sb.attempt('other', SLEEP));
    const first = await sb.cli('reconcile', '--once');
    expect(first.code, first.stderr).to.equal(0);
    await waitFor('done exited', async () => (await only(sb, 'done')).State.Status === 'exited', { instance: sb.instance });
    const second = await sb.cli('reconcile', '--once');
    expect(second.code, second.stderr).to.equal(0);
    expect((await sb.status('done'))?.phase).to.equal('Succeeded');
    const before = { run: await only(sb, 'run'), done: await only(sb, 'done'), other: await only(sb, 'other') };
    const otherRecord = await sb.status('other');

    const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
    const garbage = Buffer.from(`\u0000\u001b[31m${MARKER} not a record {{{`);
    const truncated = (await fs.readFile(path.join(attempts, 'done.json'))).subarray(0, 90);
    await fs.writeFile(path.join(attempts, 'run.json'), garbage);
    await fs.writeFile(path.join(attempts, 'done.json'), truncated);
    // The record of an attempt with no spec and nothing on the engine: no write will touch it.
    await fs.writeFile(path.join(attempts, 'gone.json'), garbage);
    // A temp file of a write whose writer is gone (no such pid).
    const temp = `.other.json.2147483646.${'0'.repeat(12)}.tmp`;
    await fs.writeFile(path.join(attempts, temp), '{"name": "oth');

    // Readers work, report, and move nothing.
    const get = await sb.cli('get');
    expect(get.code, get.stderr).to.equal(0);
    expect(get.stdout)
      .to.match(/run\s+Pending\s+RecordDamaged/)
      .and.to.match(/done\s+Pending\s+RecordDamaged/)
      .and.to.match(/other\s+Running/);
    expect(get.stderr).to.contain(`${path.join(attempts, 'run.json')}: damaged status record (not valid JSON (binary content, not text))`);
    expect(get.stderr).to.contain(
      `${path.join(attempts, 'done.json')}: damaged status record (not valid JSON (truncated: ends inside the JSON after 90 bytes))`,
    );
    const json = JSON.parse((await sb.cli('get', 'run', '-o', 'json')).stdout) as { status: { damagedRecord?: { file: string } } };
    expect(json.status.damagedRecord?.file).to.equal(path.join(attempts, 'run.json'));
    const describe = await sb.cli('describe', 'run');
    expect(describe.code, describe.stderr).to.equal(0);
    expect(describe.stdout).to.match(/Phase:\s+unknown: the status record is damaged/);
    expect(describe.stdout).to.match(/container\s+\S+\s+running/);
    for (const out of [get, describe])
      expect(out.stdout + out.stderr)
        .not.to.contain(MARKER)
        .and.not.to.contain('"instance"');
    expect(await fs.readFile(path.join(attempts, 'run.json'))).to.deep.equal(garbage);

    const r = await sb.cli('reconcile', '--once');
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).not.to.contain(MARKER).and.not.to.contain('"instance"');
    expect(r.stderr).to.match(/run\.json: damaged status record \(not valid JSON \(binary content, not text\)\) set aside as .*\/damaged\/run\.json\./);

    // Set aside, byte for byte; the temp file of the interrupted write is gone.
    const damagedDir = path.join(sb.stateDir, sb.instance, 'damaged');
    const kept = (await fs.readdir(damagedDir)).sort();
    expect(kept.map((k) => k.replace(/\.json\..*$/, ''))).to.deep.equal(['done', 'gone', 'run']);
    const keptOf = (n: string) => path.join(damagedDir, kept.find((k) => k.startsWith(`${n}.json.`)) ?? '');
    expect(await fs.readFile(keptOf('run'))).to.deep.equal(garbage);
    expect(await fs.readFile(keptOf('gone'))).to.deep.equal(garbage);
    expect(await fs.readFile(keptOf('done'))).to.deep.equal(truncated);
    expect((await fs.readdir(attempts)).sort()).to.deep.equal(['done.json', 'other.json', 'run.json']);
    expect(await fs.readdir(attempts)).not.to.include(temp);

    // The running attempt is adopted (same container, never restarted), the finished one not run again.
    const run = await sb.status('run');
    expect(run?.phase).to.equal('Running');
    expect(run?.containerId).to.equal(before.run.Id);
    expect(run?.warnings?.join('\n')).to.match(
      /status record rebuilt from the engine: the earlier one was damaged \(not valid JSON \(binary content, not text\)\) and is kept at .*damaged\/run\.json\./,
    );
    const after = { run: await only(sb, 'run'), done: await only(sb, 'done'), other: await only(sb, 'other') };
    expect(after.run.State.StartedAt).to.equal(before.run.State.StartedAt);
    const done = await sb.status('done');
    expect(done?.phase).to.equal('Succeeded');
    expect(done?.run).to.equal(1);
    expect(after.done.Id).to.equal(before.done.Id);
    expect(after.done.State.StartedAt).to.equal(before.done.State.StartedAt);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'done', 'run-1', 'results', 'count'), 'utf8')).to.equal('ran\n');
    await fs.access(path.join(sb.resultsRoot, 'done', 'run-2')).then(
      () => expect.fail('done ran again'),
      () => undefined,
    );
    // The other attempt is as it was.
    expect(after.other.Id).to.equal(before.other.Id);
    expect(after.other.State.StartedAt).to.equal(before.other.State.StartedAt);
    expect(await sb.status('other')).to.deep.equal(otherRecord);

    const described = await sb.cli('describe', 'run');
    expect(described.stdout).to.match(/WARNING:\s+.*status record rebuilt from the engine/);
    const get2 = await sb.cli('get');
    expect(get2.stderr).to.equal('');
    expect(get2.stdout)
      .to.match(/run\s+Running/)
      .and.to.match(/done\s+Succeeded/);
  });

  it("a record that parses but is not this attempt's (another name, another instance, another shape) is damaged too", async function () {
    await sb.write('a.yaml', sb.attempt('a', SLEEP));
    await sb.write('b.yaml', sb.attempt('b', SLEEP));
    await sb.write('c.yaml', sb.attempt('c', SLEEP));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
    const recA = JSON.parse(await fs.readFile(path.join(attempts, 'a.json'), 'utf8')) as Record<string, unknown>;
    await fs.writeFile(path.join(attempts, 'a.json'), JSON.stringify({ ...recA, name: 'zz' }));
    await fs.writeFile(path.join(attempts, 'b.json'), JSON.stringify({ ...recA, name: 'b', instance: 'elsewhere' }));
    await fs.writeFile(path.join(attempts, 'c.json'), JSON.stringify({ ...recA, name: 'c', run: 'one' }));
    const ids = { a: (await only(sb, 'a')).Id, b: (await only(sb, 'b')).Id, c: (await only(sb, 'c')).Id };
    const r = await sb.cli('reconcile', '--once');
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.contain('a.json: damaged status record (its name field does not match the file name)');
    expect(r.stderr).to.contain(`b.json: damaged status record (its instance field does not name instance ${sb.instance})`);
    expect(r.stderr).to.contain('c.json: damaged status record (field run is missing or not a whole number)');
    for (const n of ['a', 'b', 'c'] as const) {
      const st = await sb.status(n);
      expect([n, st?.phase, st?.containerId]).to.deep.equal([n, 'Running', ids[n]]);
      expect((await only(sb, n)).Id).to.equal(ids[n]);
    }
    // A pass that writes nothing still sets a damaged record aside.
    await fs.writeFile(path.join(attempts, 'orphan.json'), '{"name": "orphan"');
    const noop = await sb.pass();
    expect(noop.results).to.deep.equal([]);
    expect((await fs.readdir(attempts)).sort()).to.deep.equal(['a.json', 'b.json', 'c.json']);
    expect((await fs.readdir(path.join(sb.stateDir, sb.instance, 'damaged'))).filter((f) => f.startsWith('orphan.json.'))).to.have.length(1);
  });

  it("clean with the state folder gone removes every resource of the instance, and nothing of anyone else's", async function () {
    const neighbour = await Sandbox.create('dmg-nb');
    const images: string[] = [];
    let squatter: Dockerode.Container | undefined;
    try {
      await neighbour.write('n.yaml', neighbour.attempt('n', SLEEP));
      expect((await neighbour.cli('reconcile', '--once')).code).to.equal(0);
      await sb.write('a.yaml', sb.attempt('a', SLEEP, '  network: {mode: isolated}\n  volumes: [{name: cache, mountPath: /cache}]\n'));
      expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
      // An image committed from berth's own container carries all of its labels, the nonce too.
      images.push(await commit((await only(sb, 'a')).Id, 'berth-test/committed'));
      // A container berth makes from that image (its labels override the image's)...
      await sb.write('b.yaml', sb.attempt('b', SLEEP).replace(`image: ${TEST_IMAGE}`, `image: ${images[0]}`));
      const r = await sb.cli('reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      expect((await sb.status('b'))?.phase).to.equal('Running');
      // ...and one made by hand from it: every berth label inherited; not berth's.
      squatter = await docker.createContainer({ name: `${sb.instance}-by-hand`, Image: images[0], Cmd: ['sleep', '300'], Labels: { [TEST_LABEL]: TEST_RUN } });
      await squatter.start();
      expect((await squatter.inspect()).Config.Labels[LABELS.instance]).to.equal(sb.instance);

      await fs.rm(sb.stateDir, { recursive: true, force: true });
      const clean = await sb.cli('clean');
      expect(clean.code, clean.stderr).to.equal(0);
      expect(clean.stdout).to.match(/removed 2 containers, 1 network, 1 volume of instance \S+; none remain/);
      const left = await containersOf(sb);
      expect(left.map((c) => c.Id)).to.deep.equal([squatter.id]);
      expect((await squatter.inspect()).State.Running).to.equal(true);
      const nets = await docker.listNetworks({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] }) });
      const vols = (await docker.listVolumes({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] }) })).Volumes ?? [];
      expect([nets.length, vols.length]).to.deep.equal([0, 0]);
      expect((await only(neighbour, 'n')).State.Running, "the neighbour instance's attempt").to.equal(true);
    } finally {
      await squatter?.remove({ force: true }).catch(() => undefined);
      await neighbour.destroy();
      await sb.cli('clean'); // before the image goes: a container still using it would keep it
      for (const i of images)
        await docker
          .getImage(i)
          .remove({ force: true })
          .catch(() => undefined);
    }
  });

  it('clean works when the records are garbage, or their folder is not a folder', async function () {
    await sb.write('a.yaml', sb.attempt('a', SLEEP));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
    await fs.writeFile(path.join(attempts, 'a.json'), `${MARKER}\u0000`);
    const clean = await sb.cli('clean');
    expect(clean.code, clean.stderr).to.equal(0);
    expect(clean.stdout).to.match(/removed 1 container, 0 networks, 0 volumes of instance \S+; none remain/);
    expect(clean.stderr).not.to.contain(MARKER);
    // The damaged record is kept for a person to read; the records themselves are gone.
    expect(await fs.readdir(path.join(sb.stateDir, sb.instance, 'damaged'))).to.have.length(1);
    await fs.access(attempts).then(
      () => expect.fail('records left'),
      () => undefined,
    );

    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    await fs.rm(attempts, { recursive: true, force: true });
    await fs.writeFile(attempts, 'not a folder');
    const again = await sb.cli('clean');
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stdout).to.match(/removed 1 container/);
    expect(again.stderr).to.match(/status records of instance \S+ cannot be read \(ENOTDIR\); deciding by the engine's labels alone/);
  });

  it('a garbage lock file blocks no writer when the engine lock is free: set aside once, said once; two writers at once, one goes', async function () {
    await sb.write('a.yaml', sb.attempt('a', SLEEP));
    const lockFile = path.join(sb.stateDir, `${sb.instance}.lock`);
    const damagedDir = path.join(sb.stateDir, sb.instance, 'damaged');
    const garbage = `\u0000${MARKER} {{{`;
    const keptLocks = async () => (await fs.readdir(damagedDir).catch(() => [])).filter((k) => k.startsWith(`${sb.instance}.lock.`));
    await fs.mkdir(sb.stateDir, { recursive: true });

    // clean, the first writer anyone reaches for
    await fs.writeFile(lockFile, garbage);
    const clean = await berth(sb, 'clean');
    expect(clean.code, clean.stderr).to.equal(0);
    expect(clean.stderr).not.to.contain(MARKER);
    expect(clean.stderr.match(/unreadable lock file \(not JSON: binary content, not text\) set aside as \S+: the instance's engine lock/g)).to.have.length(1);
    const kept = await keptLocks();
    expect(kept).to.have.length(1);
    expect(kept[0]).to.match(/\.lock\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z$/);
    expect(await fs.readFile(path.join(damagedDir, kept[0] as string), 'utf8')).to.equal(garbage);
    await fs.access(lockFile).then(
      () => expect.fail('clean left its lock file'),
      () => undefined,
    );

    // Two writers start together on a garbage lock: the engine lock lets one in, the file lets in no second.
    await fs.writeFile(lockFile, garbage);
    const both = await Promise.all([berth(sb, 'reconcile', '--once'), berth(sb, 'reconcile', '--once')]);
    expect(both.map((r) => r.code).sort(), both.map((r) => r.stderr).join('\n')).to.deep.equal([0, 1]);
    const loser = both.find((r) => r.code === 1);
    expect(loser?.stderr).to.contain(`instance "${sb.instance}" is held on this engine by another berth process: berth reconcile --once, pid `);
    expect(await keptLocks()).to.have.length(2);
    expect(await containersOf(sb, 'a')).to.have.length(1);
    expect((await sb.status('a'))?.phase).to.equal('Running');
    expect((await fs.readdir(sb.stateDir)).filter((f) => f.startsWith(`${sb.instance}.lock`))).to.deep.equal([]);
  });

  it('a garbage lock file while the engine lock has a live holder: refused as before, naming the holder, and left alone', async function () {
    const lockFile = path.join(sb.stateDir, `${sb.instance}.lock`);
    await fs.mkdir(sb.stateDir, { recursive: true });
    await fs.writeFile(lockFile, `${MARKER} {{{`);
    const held = await acquireEngineLock(testEngine(), sb.instance, { stateDir: '/elsewhere/state', command: 'reconcile' });
    try {
      for (const args of [['clean'], ['reconcile', '--once']]) {
        const r = await sb.cli(...args);
        expect(r.code, r.stderr).to.equal(1);
        expect(r.stderr).to.contain(`instance "${sb.instance}" is held on this engine by another berth process: berth reconcile, pid ${process.pid}`);
        expect(r.stderr).to.contain('state folder /elsewhere/state').and.not.to.contain(MARKER);
      }
      expect(await fs.readFile(lockFile, 'utf8')).to.equal(`${MARKER} {{{`);
      await fs.access(path.join(sb.stateDir, sb.instance, 'damaged')).then(
        () => expect.fail('something was set aside under a live holder'),
        () => undefined,
      );
    } finally {
      await held.release();
    }
  });

  it('the records folder replaced by a file: readers answer (exit 0, a warning naming it and what to run) and move nothing; reconcile sets it aside and rebuilds from the engine', async function () {
    await sb.write('run.yaml', sb.attempt('run', SLEEP));
    await sb.write('done.yaml', sb.attempt('done', 'echo ran >> /results/count'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    await waitFor('done exited', async () => (await only(sb, 'done')).State.Status === 'exited', { instance: sb.instance });
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    expect((await sb.status('done'))?.phase).to.equal('Succeeded');
    const before = { run: await only(sb, 'run'), done: await only(sb, 'done') };

    const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
    await fs.rm(attempts, { recursive: true });
    await fs.writeFile(attempts, `${MARKER}\u0000`);
    const warning = `${attempts}: the status records folder is damaged (a file, not a folder); every attempt is read as if it had no record. \`berth reconcile --once\``;

    const get = await sb.cli('get');
    expect(get.code, get.stderr).to.equal(0);
    expect(get.stdout)
      .to.match(/run\s+Pending\s+RecordDamaged/)
      .and.to.match(/done\s+Pending\s+RecordDamaged/);
    expect(get.stderr).to.contain(warning).and.not.to.contain('    at ');
    const json = await sb.cli('get', '-o', 'json');
    expect(json.code, json.stderr).to.equal(0);
    const list = JSON.parse(json.stdout) as {
      items: { metadata: { name: string }; status: { reason: string; damagedRecord?: { file: string; problem: string } } }[];
    };
    expect(list.items.map((i) => [i.metadata.name, i.status.reason, i.status.damagedRecord?.file])).to.deep.equal([
      ['done', 'RecordDamaged', attempts],
      ['run', 'RecordDamaged', attempts],
    ]);
    expect(list.items[0]?.status.damagedRecord?.problem).to.equal('the status records folder is a file, not a folder');
    const describe = await sb.cli('describe', 'run');
    expect(describe.code, describe.stderr).to.equal(0);
    expect(describe.stdout).to.match(/Phase:\s+unknown: the status record is damaged/);
    expect(describe.stdout).to.match(/container\s+\S+\s+running/);
    const summary = await sb.cli('summary');
    expect(summary.code, summary.stderr).to.equal(0);
    expect(summary.stderr).to.contain(warning);
    for (const out of [get, json, describe, summary]) expect(out.stdout + out.stderr).not.to.contain(MARKER);
    expect((await fs.lstat(attempts)).isFile(), 'readers moved nothing').to.equal(true);

    const r = await sb.cli('reconcile', '--once');
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.match(/the damaged status records folder \(a file, not a folder\) was set aside as \S+\/damaged\/attempts\.\d{4}-/);
    const damagedDir = path.join(sb.stateDir, sb.instance, 'damaged');
    const kept = (await fs.readdir(damagedDir)).filter((k) => k.startsWith('attempts.'));
    expect(kept).to.have.length(1);
    expect(await fs.readFile(path.join(damagedDir, kept[0] as string), 'utf8')).to.equal(`${MARKER}\u0000`);
    // Rebuilt from the engine: the running attempt adopted (same container, never restarted), the finished one not run again.
    expect((await fs.readdir(attempts)).sort()).to.deep.equal(['done.json', 'run.json']);
    const run = await sb.status('run');
    expect([run?.phase, run?.containerId]).to.deep.equal(['Running', before.run.Id]);
    expect((await only(sb, 'run')).State.StartedAt).to.equal(before.run.State.StartedAt);
    const done = await sb.status('done');
    expect([done?.phase, done?.run]).to.deep.equal(['Succeeded', 1]);
    expect((await only(sb, 'done')).Id).to.equal(before.done.Id);
    await fs.access(path.join(sb.resultsRoot, 'done', 'run-2')).then(
      () => expect.fail('done ran again'),
      () => undefined,
    );
    const get2 = await sb.cli('get');
    expect(get2.stderr).to.equal('');
    expect(get2.stdout)
      .to.match(/run\s+Running/)
      .and.to.match(/done\s+Succeeded/);
  });

  for (const kind of ['a file', 'a link to nothing'] as const) {
    it(`the state folder as ${kind}: every command says so naming the path, exit 1, no stack trace, nothing created`, async function () {
      await sb.write('a.yaml', sb.attempt('a', SLEEP));
      await fs.rm(sb.stateDir, { recursive: true, force: true });
      if (kind === 'a file') await fs.writeFile(sb.stateDir, 'x');
      else await fs.symlink(path.join(sb.dir, 'nowhere'), sb.stateDir);
      try {
        const problem = kind === 'a file' ? 'a file, not a folder' : `a link to nothing (${path.join(sb.dir, 'nowhere')})`;
        for (const args of [['get'], ['get', '-o', 'json'], ['describe', 'a'], ['summary'], ['reconcile', '--once'], ['clean']]) {
          const r = await sb.cli(...args);
          expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(1);
          expect(r.stderr, args.join(' ')).to.contain(`berth: ${sb.stateDir}: the state folder is ${problem}; move it out of the way`);
          expect(r.stderr).not.to.contain('    at ');
        }
        expect(await containersOf(sb)).to.deep.equal([]);
        await fs.access(path.join(sb.dir, 'nowhere')).then(
          () => expect.fail('berth made the folder the link points at'),
          () => undefined,
        );
      } finally {
        await fs.rm(sb.stateDir, { force: true }); // for the sandbox's own clean
      }
    });
  }

  for (const kind of ['volume', 'network'] as const) {
    it(`a ${kind} made by hand under an attempt's ${kind} name blocks the attempt and is left alone (never mounted or joined)`, async function () {
      const name = kind === 'volume' ? volumeName(sb.instance, 'v', 'cache') : networkName(sb.instance, 'v');
      const labels = { [TEST_LABEL]: TEST_RUN, mine: 'yes' };
      if (kind === 'volume') await docker.createVolume({ Name: name, Labels: labels });
      else await docker.createNetwork({ Name: name, Labels: labels, CheckDuplicate: true });
      try {
        await sb.write('v.yaml', sb.attempt('v', SLEEP, '  network: {mode: isolated}\n  volumes: [{name: cache, mountPath: /cache}]\n'));
        const r = await sb.cli('reconcile', '--once');
        expect(r.code, r.stderr).to.equal(0);
        const st = await sb.status('v');
        expect([st?.phase, st?.reason]).to.deep.equal(['Blocked', 'NameConflict']);
        expect(st?.message).to.equal(`${kind} name needed by attempt v is held by a ${kind} berth does not own (it carries no berth labels); it is left alone`);
        expect(await containersOf(sb, 'v')).to.deep.equal([]);
        const still =
          kind === 'volume'
            ? ((await docker.getVolume(name).inspect()) as unknown as { Labels: Record<string, string> })
            : await docker.getNetwork(name).inspect();
        expect(still.Labels).to.deep.equal(labels);
        expect((await sb.cli('clean')).code).to.equal(0);
        if (kind === 'volume') await docker.getVolume(name).inspect();
        else await docker.getNetwork(name).inspect();
      } finally {
        await sb.cli('clean');
        if (kind === 'volume') await docker.getVolume(name).remove();
        else await docker.getNetwork(name).remove();
      }
    });
  }

  it("a container from a berth-labeled image holding a sidecar's name blocks the attempt and is left alone", async function () {
    const tag = await labeledSidecarImage(sb.instance, 's');
    const squatter = await docker.createContainer({
      name: sidecarName(sb.instance, 's', 'tools'),
      Image: tag,
      Cmd: ['sleep', '300'],
      Labels: { [TEST_LABEL]: TEST_RUN },
    });
    try {
      await squatter.start();
      const original = await squatter.inspect();
      await sb.write('s.yaml', sb.attempt('s', SLEEP, WITH_TOOLS));
      const r = await sb.cli('reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      const st = await sb.status('s');
      expect([st?.phase, st?.reason]).to.deep.equal(['Blocked', 'NameConflict']);
      expect(st?.message).to.match(/is held by container \S+ that berth did not create \(its berth labels come from its image\); it is left alone/);
      const still = await squatter.inspect();
      expect([still.Id, still.State.Running, still.State.StartedAt]).to.deep.equal([original.Id, true, original.State.StartedAt]);
      expect(still.Config.Labels).to.deep.equal(original.Config.Labels);
      expect(await containersOf(sb, 's').then((l) => l.map((c) => c.Id))).to.deep.equal([original.Id]);
      const described = await sb.cli('describe', 's');
      expect(described.stdout).to.match(/container\s+\S+_sc_tools\s+running\s+not berth's: its berth labels come from its image/);
      const clean = await sb.cli('clean');
      expect(clean.code, clean.stderr).to.equal(0);
      expect((await squatter.inspect()).State.Running).to.equal(true);
    } finally {
      await squatter.remove({ force: true }).catch(() => undefined);
      await docker.getImage(tag).remove({ force: true });
    }
  });

  it("a sidecar's name taken while the attempt runs: the attempt ends Failed (SidecarFailed), the squatter is left alone", async function () {
    const tag = await labeledSidecarImage(sb.instance, 's');
    let squatter: Dockerode.Container | undefined;
    try {
      await sb.write('s.yaml', sb.attempt('s', SLEEP, WITH_TOOLS));
      expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
      expect((await sb.status('s'))?.phase).to.equal('Running');
      const name = sidecarName(sb.instance, 's', 'tools');
      await docker.getContainer(name).remove({ force: true });
      squatter = await docker.createContainer({ name, Image: tag, Cmd: ['sleep', '300'], Labels: { [TEST_LABEL]: TEST_RUN } });
      await squatter.start();
      const original = await squatter.inspect();
      const r = await sb.cli('reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      const st = await sb.status('s');
      expect([st?.phase, st?.reason]).to.deep.equal(['Failed', 'SidecarFailed']);
      expect(st?.message).to.match(/^sidecar tools cannot be started again: container name \S+ is held by container \S+ that berth did not create/);
      const main = (await containersOf(sb, 's')).filter((c) => c.Id !== original.Id);
      expect(main.map((c) => c.State)).to.deep.equal(['exited']);
      const still = await squatter.inspect();
      expect([still.Id, still.State.Running, still.State.StartedAt]).to.deep.equal([original.Id, true, original.State.StartedAt]);
    } finally {
      await squatter?.remove({ force: true }).catch(() => undefined);
      await sb.cli('clean');
      await docker.getImage(tag).remove({ force: true });
    }
  });
});
