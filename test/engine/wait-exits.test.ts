/**
 * `reconcile --once --wait` records an exit, and gives the slot it frees, while the pass that
 * started it is still busy with its other actions (side passes, src/cli/commands/reconcile.ts
 * exitsAlongside; issue 18: an exit waited for the pass's last start before the next pass
 * looked, and so did the attempt waiting for its slot).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

describe('reconcile --once --wait: exits during a pass (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('wait-exits');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('harvests an attempt that exits while the same pass still provisions another, and starts the waiting one in its slot', async function () {
    // c already waits for a slot (its record written by an earlier pass, while ab held the only one).
    await sb.write('c.yaml', sb.attempt('c', 'true'));
    await sb.write('ab.yaml', sb.attempt('ab', 'true'));
    const first = await sb.cli('reconcile', '--once', '--max-running', '1');
    expect([first.code, (await sb.status('c'))?.phase], first.stderr).to.deep.equal([0, 'Pending']);
    // Two slots, one action at a time: a starts and exits at once; b copies a 64 MiB fixture in.
    await sb.write('fx/big.bin', Buffer.alloc(64 * 1024 * 1024, 7));
    await sb.write('a.yaml', sb.attempt('a', 'echo quick > /results/out.txt'));
    await sb.write('b.yaml', sb.attempt('b', 'true', '  fixture: ./fx\n'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--max-running', '2', '--concurrency', '1', '--timeout', '150');
    expect(r.code, r.stderr).to.equal(0);
    const [a, b, c] = [await sb.status('a'), await sb.status('b'), await sb.status('c')];
    expect([a?.phase, b?.phase, c?.phase]).to.deep.equal(['Succeeded', 'Succeeded', 'Succeeded']);
    const bStarted = Date.parse(b?.startedAt ?? '');
    // a's finished record was written (its last write), and c's provisioning began, before b, provisioned by the first pass, started.
    expect(Date.parse(a?.updatedAt ?? ''), `a recorded ${a?.updatedAt}, b started ${b?.startedAt}`).to.be.below(bStarted);
    expect(Date.parse(c?.provisionedAt ?? ''), `c provisioned ${c?.provisionedAt}, b started ${b?.startedAt}`).to.be.below(bStarted);
    // a's harvest is complete.
    const run = path.dirname(a?.resultsDir ?? '');
    expect((await fs.readFile(path.join(a?.resultsDir ?? '', 'out.txt'), 'utf8')).trim()).to.equal('quick');
    for (const f of ['logs.txt', 'manifest.json', 'status.json']) await fs.access(path.join(run, f));
  });
});
