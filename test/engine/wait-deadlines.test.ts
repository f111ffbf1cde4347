/**
 * `reconcile --once --wait` keeps every deadline, whatever the other attempts' stops do: an
 * attempt that ignores SIGTERM holds its stop for the whole grace (10 s), and another attempt's
 * deadline, passing meanwhile, is still kept (its stop has a lane of its own,
 * src/controller/controller.ts): it ends while the first one's stop still waits. Before the one
 * loop, the pass that stopped the first waited out its grace before the next pass looked at the
 * second's deadline, so the second ended after the first.
 */
import { expect } from 'chai';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const ranMs = (s: { startedAt?: string; finishedAt?: string } | undefined): number => Date.parse(s?.finishedAt ?? '') - Date.parse(s?.startedAt ?? '');

describe('reconcile --once --wait: deadlines (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('wait-deadlines');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('a stop that takes its whole grace never delays another attempt’s deadline', async function () {
    // busybox sh: a trapped TERM is ignored, so only the KILL after the grace ends it.
    await sb.write('stubborn.yaml', sb.attempt('stubborn', "trap '' TERM; while true; do sleep 1; done", '  deadlineSeconds: 1\n'));
    await sb.write('prompt.yaml', sb.attempt('prompt', 'sleep 600', '  deadlineSeconds: 2\n'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--timeout', '90');
    expect(r.code, r.stderr).to.equal(3);
    const [stubborn, prompt] = [await sb.status('stubborn'), await sb.status('prompt')];
    expect([stubborn?.phase, prompt?.phase]).to.deep.equal(['TimedOut', 'TimedOut']);
    // The stubborn one was given its grace: TERM at 1 s, KILL 10 s later.
    expect(ranMs(stubborn), 'stubborn ran (ms)').to.be.at.least(10_000);
    // The prompt one was stopped after its deadline, while the stubborn one's stop still waited
    // its grace (the engine's times; about 9 s apart, not a bound on berth's pace).
    expect(ranMs(prompt), 'prompt ran (ms)').to.be.at.least(2_000);
    expect(Date.parse(prompt?.finishedAt ?? ''), 'prompt finished before stubborn').to.be.below(Date.parse(stubborn?.finishedAt ?? ''));
  });

  it('a deadline is judged even unobserved: a run found finished after it is TimedOut, whatever its exit code', async function () {
    // --once without --wait: nothing watches at the deadline; the run ends by itself after it (exit 0)
    await sb.write('late.yaml', sb.attempt('late', 'sleep 4', '  deadlineSeconds: 1\n'));
    await sb.write('early.yaml', sb.attempt('early', 'true', '  deadlineSeconds: 60\n'));
    const first = await sb.cli('reconcile', '--once');
    expect(first.code, first.stderr).to.equal(0);
    const late = await sb.status('late');
    await docker.getContainer(late?.containerId as string).wait();
    const again = await sb.cli('reconcile', '--once', '--wait');
    const rec = await sb.status('late');
    expect([rec?.phase, rec?.reason, rec?.exitCode]).to.deep.equal(['TimedOut', 'DeadlineExceeded', 0]);
    expect(rec?.message).to.include('judged when found finished');
    expect((await sb.status('early'))?.phase).to.equal('Succeeded');
    // a task outcome: the run failed
    expect([again.code, again.stdout.trim().split('\n').at(-1)]).to.deep.equal([3, '1 passed, 1 failed, 0 infrastructure']);
  });
});
