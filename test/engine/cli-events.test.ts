/** berth events on the real engine: a run that dies, its retry, with the engine's times; -o json; unknown names. */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import path from 'node:path';
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

  it('events -w while runs end: each run has exactly one Finished event, with its final phase (never the Running of its harvest)', async function () {
    const own = await Sandbox.create('eventsw');
    try {
      // many result files: the harvest (hashing them) takes a while, with the record reading Harvesting meanwhile
      const many = 'for i in $(seq 1 1500); do echo $i > /results/f$i; done';
      for (const n of ['p', 'q', 'r']) await own.write(`${n}.yaml`, own.attempt(n, many));
      const watcher = spawn(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'berth.js'), 'events', '-w', '-o', 'json', ...own.globalArgs()], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      watcher.stdout.on('data', (c) => (out += String(c)));
      const exited = new Promise<number | null>((resolve) => watcher.on('exit', (code) => resolve(code)));
      const r = await own.cli('reconcile', '--once', '--wait');
      expect(r.code, r.stderr).to.equal(0);
      // the watcher sees the last record written (a folder watch), then stops on SIGINT
      await new Promise<void>((resolve) => {
        const look = () => (out.split('\n').filter((l) => l.includes('"Finished"') && l.includes('Succeeded')).length >= 3 ? resolve() : setTimeout(look, 100));
        look();
      });
      watcher.kill('SIGINT');
      expect(await exited).to.equal(0);
      const finished = out
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { attempt: string; reason: string; message: string })
        .filter((e) => e.reason === 'Finished' || e.reason === 'Died');
      expect(finished.map((e) => `${e.attempt}: ${e.message}`).sort()).to.deep.equal([
        'p: run 1 Succeeded (Completed, exit 0)',
        'q: run 1 Succeeded (Completed, exit 0)',
        'r: run 1 Succeeded (Completed, exit 0)',
      ]);
    } finally {
      await own.destroy();
    }
  });
});
