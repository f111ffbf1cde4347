/** berth events on the real engine: a run that dies, its retry, with the engine's times; -o json; unknown names. */
import { expect } from 'chai';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

describe('cli events (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('events');
    await sb.write('a.yaml', sb.attempt('a', 'exit 3', '  retries: 1\n'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--retry-backoff', '0');
    expect(r.code, r.stderr).to.equal(3);
  });
  after(async function () {
    await sb.destroy();
  });

  it('lists created, started, died, retried, died, newest last, at the engine times', async function () {
    const t = await sb.cli('events');
    expect(t.code, t.stderr).to.equal(0);
    const lines = t.stdout.trimEnd().split('\n');
    expect(lines[0]).to.match(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    const j = await sb.cli('events', 'a', '-o', 'json');
    const events = j.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { at: string; reason: string; message: string });
    expect(events.map((e) => e.reason).filter((r) => r !== 'Attested')).to.deep.equal(['Created', 'Started', 'Died', 'Retried', 'Died']);
    const st = await sb.status('a');
    expect(events.find((e) => e.reason === 'Retried')?.at).to.equal(st?.startedAt);
    expect(events.filter((e) => e.reason !== 'Attested').at(-1)?.message).to.equal('run 2 Failed (Error, exit 3): exited with code 3');
    const missing = await sb.cli('events', 'nope');
    expect(missing.code).to.equal(1);
  });
});
