/** berth wait on the real engine: it wakes on status record changes, times out with exit 1, and ends early when the phase can no longer come. */
import { expect } from 'chai';
import { DEFAULTS, LABELS } from '../../src/constants';
import { startController } from '../support/controller';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

/** What `wait` says when nothing reconciles the instance (issue 37). */
const nobody = (instance: string) =>
  `nothing reconciles instance "${instance}" (no berth holds its lock), so their records do not change: run \`berth reconcile --once --wait\` (or keep \`berth reconcile\` running), which records what their containers did`;

describe('cli wait (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('wait');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('returns once reconcile has finished the attempts, printing each as its condition is met', async function () {
    await sb.write('a.yaml', [sb.attempt('a', 'true').replace('name: a', 'name: a\n  labels: {suite: s}'), sb.attempt('b', 'true')].join('---\n'));
    let settledEarly = false;
    const waiting = sb.cli('wait', '-l', 'suite', '--timeout', '40s').finally(() => (settledEarly = true));
    // nothing has run yet: the wait must still be waiting
    const r0 = await sb.cli('get', 'a', '-o', 'name');
    expect([r0.code, settledEarly]).to.deep.equal([0, false]);
    const rec = await sb.cli('reconcile', '--once', '--wait');
    expect(rec.code, rec.stderr).to.equal(0);
    const w = await waiting;
    expect([w.code, w.stdout, w.stderr]).to.deep.equal([0, 'attempt/a condition met (finished: passed)\n1 passed, 0 failed, 0 infrastructure\n', '']);
  });

  it('--timeout: exit 1 naming the attempts unfinished (JSON with --log-format json); --for phase=Running holds', async function () {
    await sb.write('slow.yaml', sb.attempt('slow', 'sleep 30'));
    const rec = await sb.cli('reconcile', '--once');
    expect(rec.code, rec.stderr).to.equal(0);
    // slow sleeps 30 s: an exit 1 that says so came from the --timeout
    const w = await sb.cli('wait', 'slow', '--timeout', '1s');
    expect([w.code, w.stdout, w.stderr]).to.deep.equal([
      1,
      '0 passed, 0 failed, 0 infrastructure, 1 unfinished\n',
      `berth: --timeout 1s passed with 1 attempt not finished: slow (Running); ${nobody(sb.instance)}\n`,
    ]);
    const j = await sb.cli('wait', '--timeout', '500ms', '--log-format', 'json');
    expect(j.code).to.equal(1);
    const line = JSON.parse(j.stderr) as { level: string; message: string };
    expect([line.level, line.message]).to.deep.equal(['error', `--timeout 500ms passed with 1 attempt not finished: slow (Running); ${nobody(sb.instance)}`]);
    const running = await sb.cli('wait', 'slow', '--for', 'phase=Running', '--timeout', '5s');
    expect([running.code, running.stdout]).to.deep.equal([
      0,
      'attempt/slow condition met (phase=Running: Running)\n0 passed, 0 failed, 0 infrastructure, 1 unfinished\n',
    ]);
  });

  it('nothing reconciling the instance: ends within seconds (exit 1) saying what to run, not at --timeout; a controller started beside it is waited for', async function () {
    await sb.write('quick.yaml', sb.attempt('quick', 'sleep 1'));
    const rec = await sb.cli('reconcile', '--once');
    expect(rec.code, rec.stderr).to.equal(0);
    // its container exits; nothing records it
    const [c] = await sb.engine.containers.list([`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=quick`]);
    await docker.getContainer(c!.id).wait();
    const t0 = Date.now();
    const w = await sb.cli('wait', 'quick', '--timeout', '40s');
    const ms = Date.now() - t0;
    // not the --timeout's message: it ended at its grace, which it waited out
    expect([w.code, w.stderr]).to.deep.equal([1, `berth: 1 attempt not finished: quick (Running); ${nobody(sb.instance)}\n`]);
    expect(ms, 'DEFAULTS.unreconciledWaitGraceMs waited').to.be.at.least(DEFAULTS.unreconciledWaitGraceMs - 500);
    // a controller that takes the instance meanwhile: the wait goes on and ends with its records
    const waiting = sb.cli('wait', 'quick', '--timeout', '40s');
    const ctl = startController(sb);
    try {
      const again = await waiting;
      expect([again.code, again.stdout, again.stderr]).to.deep.equal([
        0,
        'attempt/quick condition met (finished: passed)\n1 passed, 0 failed, 0 infrastructure\n',
        '',
      ]);
    } finally {
      await ctl.stop();
    }
  });

  it('ends with 3 when an attempt failed and Succeeded was waited for (0 with --fail-on infra); unknown names and bad --for are refused', async function () {
    await sb.write('bad.yaml', sb.attempt('bad', 'exit 4'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(3);
    const w = await sb.cli('wait', 'bad', '--for', 'phase=Succeeded', '--timeout', '20s');
    expect([w.code, w.stdout, w.stderr]).to.deep.equal([3, '0 passed, 1 failed, 0 infrastructure\n', 'berth: bad ended Failed (Error)\n']);
    const eval_ = await sb.cli('wait', 'bad', '--fail-on', 'infra', '--timeout', '20s');
    expect([eval_.code, eval_.stdout]).to.deep.equal([
      0,
      'attempt/bad condition met (finished: failed (Error, exit 4))\n0 passed, 1 failed, 0 infrastructure\n',
    ]);
    process.env.BERTH_FAIL_ON = 'none';
    try {
      const env = await sb.cli('wait', 'bad', '--for', 'finished', '--timeout', '20s');
      expect(env.code, env.stderr).to.equal(0);
    } finally {
      delete process.env.BERTH_FAIL_ON;
    }
    expect((await sb.cli('wait', 'bad', '--fail-on', 'some')).code).to.equal(2);
    const missing = await sb.cli('wait', 'bad', 'nope');
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.match(/^berth: attempt "nope" not found: instance "[^"]+" has \d+ attempts?: [^\n]*\bbad\b[^\n]*\n$/);
    expect((await sb.cli('wait', '--for', 'condition=Ready')).code).to.equal(2);
    expect((await sb.cli('wait', '-l', 'a in (')).code).to.equal(2);
  });
});
