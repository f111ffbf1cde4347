/**
 * berth rerun and berth delete on the real engine: a new run with a new folder; resources removed
 * now, results kept, not re-created by reconcile. How they take names (attempt/NAME, set/NAME,
 * --all, get -o name piped in): test/unit/cli/rerun-delete-names.test.ts, on the fake engine.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

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
    expect([busy.code, busy.stderr]).to.deep.equal([1, 'berth: slow: it is Running, not finished: only a finished attempt (or a failed build) is re-run\n']);
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
});
