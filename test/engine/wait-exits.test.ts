/**
 * `reconcile --once --wait` records an exit while the pass that started it is still busy with
 * its other actions (side passes, src/cli/commands/reconcile.ts exitsAlongside; issue 18: an
 * exit waited for the pass's last start before the next pass looked).
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

  it('harvests an attempt that exits while the same pass still provisions the next ones, with its harvest complete', async function () {
    // One action at a time: a starts and exits at once; b and c each copy a 48 MiB fixture in.
    await sb.write('fx/big.bin', Buffer.alloc(48 * 1024 * 1024, 7));
    await sb.write('a.yaml', sb.attempt('a', 'echo quick > /results/out.txt'));
    await sb.write('b.yaml', sb.attempt('b', 'true', '  fixture: ./fx\n'));
    await sb.write('c.yaml', sb.attempt('c', 'true', '  fixture: ./fx\n'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--max-running', '3', '--concurrency', '1', '--timeout', '150');
    expect(r.code, r.stderr).to.equal(0);
    const [a, c] = [await sb.status('a'), await sb.status('c')];
    expect([a?.phase, c?.phase]).to.deep.equal(['Succeeded', 'Succeeded']);
    // a's finished record was written (its last write) before the pass began to provision c.
    expect(Date.parse(a?.updatedAt ?? ''), `a recorded ${a?.updatedAt}, c provisioned ${c?.provisionedAt}`).to.be.below(Date.parse(c?.provisionedAt ?? ''));
    const run = path.dirname(a?.resultsDir ?? '');
    expect((await fs.readFile(path.join(a?.resultsDir ?? '', 'out.txt'), 'utf8')).trim()).to.equal('quick');
    for (const f of ['logs.txt', 'manifest.json', 'status.json']) await fs.access(path.join(run, f));
  });
});
