/** berth rerun and berth delete on the real engine: a new run with a new folder; resources removed now, results kept, not re-created by reconcile. */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

/** The built CLI (npm run build) as `berth` on PATH. */
const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

/** `script` run by sh as a user types it, `berth` the built CLI, the sandbox's folders and instance from BERTH_*. */
async function shell(sb: Sandbox, script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const bin = path.join(sb.specsDir, '..', 'bin');
  await fs.mkdir(bin, { recursive: true });
  await fs.writeFile(path.join(bin, 'berth'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`, { mode: 0o755 });
  const env = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    BERTH_SPECS: sb.specsDir,
    BERTH_STATE: sb.stateDir,
    BERTH_RESULTS_ROOT: sb.resultsRoot,
    BERTH_INSTANCE: sb.instance,
    BERTH_LOG_LEVEL: 'warn',
  };
  const r = spawnSync('sh', ['-c', script], { env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const GRID = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: grid, labels: {suite: names}}
spec:
  matrix: {x: [c, a]}
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo x=\${{ matrix.x }} run; echo $RANDOM > /results/out.txt']
`;

describe('cli rerun and delete (real engine)', function () {
  this.timeout(90_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('rerun');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  const ours = async (attempt: string) => (await sb.engine.containers.list([`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=${attempt}`])).length;

  it('rerun: a finished attempt gets run 2 in its own folder, run 1 kept; a running one is refused', async function () {
    await sb.write(
      'a.yaml',
      [sb.attempt('a', 'echo $RANDOM > /results/out.txt').replace('name: a', 'name: a\n  labels: {suite: s}'), sb.attempt('b', 'true')].join('---\n'),
    );
    const first = await sb.cli('reconcile', '--once', '--wait');
    expect(first.code, first.stderr).to.equal(0);
    const r = await sb.cli('rerun', '-l', 'suite=s');
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^attempt\/a rerun: run 2 (Running|Succeeded)\n$/);
    expect(r.stderr).to.equal('1 attempt re-run\n');
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    const st = await sb.status('a');
    expect([st?.run, st?.phase, st?.history.map((h) => h.run), st?.rerunRequested]).to.deep.equal([2, 'Succeeded', [1], undefined]);
    await fs.access(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'out.txt'));
    await fs.access(path.join(sb.resultsRoot, 'a', 'run-2', 'results', 'out.txt'));
    // the other attempt was not touched by the rerun
    expect((await sb.status('b'))?.run).to.equal(1);
    await sb.write('slow.yaml', sb.attempt('slow', 'sleep 30'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    const busy = await sb.cli('rerun', 'slow');
    expect([busy.code, busy.stderr]).to.deep.equal([1, 'berth: slow: it is Running, not finished: only a finished attempt is re-run\n']);
    expect((await sb.cli('rerun')).code).to.equal(2);
    expect((await sb.cli('rerun', 'nope')).code).to.equal(1);
  });

  it('rerun with nothing reconciling: a run recorded Running whose container exited long ago is recorded finished, then re-run', async function () {
    await sb.write('quick.yaml', sb.attempt('quick', 'echo $RANDOM > /results/out.txt; sleep 1'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    expect((await sb.status('quick'))?.phase).to.equal('Running');
    const [c] = await sb.engine.containers.list([`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=quick`]);
    await docker.getContainer(c!.id).wait();
    const r = await sb.cli('rerun', 'quick');
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^attempt\/quick rerun: run 2 (Running|Succeeded)\n$/);
    const st = await sb.status('quick');
    expect([st?.run, st?.history.map((h) => [h.run, h.phase])]).to.deep.equal([2, [[1, 'Succeeded']]]);
    await fs.access(path.join(sb.resultsRoot, 'quick', 'run-1', 'results', 'out.txt'));
  });

  it('delete: stops a running attempt and removes its resources now; results stay; reconcile leaves it deleted; rerun brings it back', async function () {
    await sb.write('slow.yaml', sb.attempt('slow', 'echo started > /results/s.txt; sleep 30'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    expect((await sb.cli('wait', 'slow', '--for', 'phase=Running', '--timeout', '20s')).code).to.equal(0);
    expect(await ours('slow')).to.equal(1);
    const d = await sb.cli('delete', 'slow');
    expect(d.code, d.stderr).to.equal(0);
    expect(d.stdout, d.stdout).to.match(/^attempt\/slow deleted \(stopped; removed 1 container; results stay in .*run-1\/results\)\n$/);
    expect(d.stderr).to.equal('1 attempt deleted; not run again until the spec changes or berth rerun\n');
    expect(await ours('slow')).to.equal(0);
    const st = await sb.status('slow');
    expect([st?.phase, st?.reason]).to.deep.equal(['Failed', 'Deleted']);
    await fs.access(path.join(sb.resultsRoot, 'slow', 'run-1', 'results', 's.txt'));
    const again = await sb.cli('reconcile', '--once');
    expect(again.code, again.stderr).to.equal(0);
    expect(await ours('slow')).to.equal(0);
    const plan = await sb.cli('plan');
    expect(plan.stdout).to.not.match(/create/);
    const back = await sb.cli('rerun', 'slow');
    expect(back.code, back.stderr).to.equal(0);
    expect(await ours('slow')).to.be.greaterThan(0);
    expect((await sb.status('slow'))?.run).to.equal(2);
  });

  it('rerun --all re-runs every finished attempt and leaves a running one; delete --all removes every attempt; neither takes names with it', async function () {
    await sb.write('grid.yaml', GRID);
    await sb.write('solo.yaml', sb.attempt('solo', 'true'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    await sb.write('slow.yaml', sb.attempt('slow', 'sleep 30'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    const all = await shell(sb, 'berth rerun --all');
    expect(all.code, all.stderr).to.equal(0);
    expect([...all.stdout.matchAll(/^attempt\/(\S+) rerun:/gm)].map((m) => m[1])).to.deep.equal(['grid-a', 'grid-c', 'solo']);
    expect(all.stderr).to.equal('3 attempts re-run\n');
    expect([(await sb.status('grid-a'))?.run, (await sb.status('solo'))?.run, (await sb.status('slow'))?.run]).to.deep.equal([2, 2, 1]);
    const both = await shell(sb, 'berth rerun --all solo');
    expect([both.code, both.stderr]).to.deep.equal([2, 'berth: rerun: --all takes no names and no -l\n']);
    const del = await shell(sb, 'berth delete --all');
    expect(del.code, del.stderr).to.equal(0);
    expect(del.stderr).to.equal('4 attempts deleted; not run again until the spec changes or berth rerun\n');
    expect(await sb.engine.containers.list([`${LABELS.instance}=${sb.instance}`])).to.deep.equal([]);
    const again = await shell(sb, 'berth delete --all');
    expect([again.code, again.stderr]).to.deep.equal([1, 'berth: delete --all: no attempt to delete\n']);
  });

  it('names as get -o name prints them: get -o name | xargs berth rerun; set/NAME stands for its attempts in describe, logs and rerun', async function () {
    await sb.write('grid.yaml', GRID);
    await sb.write('solo.yaml', sb.attempt('solo', 'true'));
    const first = await sb.cli('reconcile', '--once', '--wait');
    expect(first.code, first.stderr).to.equal(0);

    const piped = await shell(sb, 'berth get -o name -l suite=names | xargs berth rerun');
    expect(piped.code, piped.stderr).to.equal(0);
    expect(piped.stdout).to.match(/^attempt\/grid-a rerun: run 2 (Running|Succeeded)\nattempt\/grid-c rerun: run 2 (Running|Succeeded)\n$/);
    expect(piped.stderr).to.equal('2 attempts re-run\n');
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    expect([(await sb.status('grid-a'))?.run, (await sb.status('grid-c'))?.run, (await sb.status('solo'))?.run]).to.deep.equal([2, 2, 1]);

    // describe and logs of a set: its attempts in expansion order (c before a), one after another
    const d = await shell(sb, 'berth describe set/grid');
    expect(d.code, d.stderr).to.equal(0);
    expect([...d.stdout.matchAll(/^Name: +(\S+)$/gm)].map((m) => m[1])).to.deep.equal(['grid-c', 'grid-a']);
    const logs = await sb.cli('logs', 'set/grid');
    expect([logs.code, logs.stdout]).to.deep.equal([0, '==> attempt/grid-c <==\nx=c run\n\n==> attempt/grid-a <==\nx=a run\n']);
    expect((await sb.cli('logs', '-l', 'x=a')).stdout).to.equal('x=a run\n');
    const ev = await sb.cli('events', 'set/grid', '-o', 'json');
    expect(
      new Set(
        ev.stdout
          .trimEnd()
          .split('\n')
          .map((l) => (JSON.parse(l) as { attempt: string }).attempt),
      ),
    ).to.deep.equal(new Set(['grid-a', 'grid-c']));

    // rerun set/NAME: the set's attempts, nothing else
    const r = await sb.cli('rerun', 'set/grid');
    expect([r.code, r.stderr]).to.deep.equal([0, '2 attempts re-run\n']);

    // what does not exist is named, with what does; a kind berth does not know is a usage error
    const typo = await shell(sb, 'berth describe set/gird');
    expect([typo.code, typo.stdout, typo.stderr]).to.deep.equal([1, '', 'berth: AttemptSet "gird" not found (did you mean set/grid?)\n']);
    const bare = await sb.cli('rerun', 'grid');
    expect([bare.code, bare.stderr]).to.deep.equal([1, 'berth: attempt "grid" not found: set/grid names the 2 attempts of AttemptSet grid\n']);
    const pod = await shell(sb, 'berth delete pod/solo');
    expect([pod.code, pod.stderr]).to.deep.equal([
      2,
      'berth: "pod/solo": berth has no kind "pod": give an attempt name, attempt/NAME, or set/NAME (the attempts of an AttemptSet)\n',
    ]);
    expect((await sb.status('solo'))?.deleted).to.equal(undefined);
  });
});
