/** berth get -w on the real engine: the listing, then a line per change as reconcile moves the attempt, until stopped. */
import { expect } from 'chai';
import path from 'node:path';
import { runGet } from '../../src/cli/commands/get';
import { makeContext } from '../../src/cli/context';
import { bufferIo } from '../../src/cli/io';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

describe('cli get -w (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('watch');
  });
  after(async function () {
    await sb.destroy();
  });

  it('prints the listing, then each change of a row, and ends when stopped', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'true'));
    const io = bufferIo();
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance, logLevel: 'warn' }, io);
    const stop = new AbortController();
    const watching = runGet(ctx, [], { watch: true, signal: stop.signal, headers: true });
    await waitFor('the first listing', async () => io.stdout.includes('NotReconciled'), { timeoutMs: 10_000 });
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    await waitFor('the Succeeded row', async () => /a\s+Succeeded\s+Completed\s+0\s+1/.test(io.stdout), {
      dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
      timeoutMs: 20_000,
    });
    stop.abort();
    expect(await watching).to.equal(0);
    const lines = io.stdout.trimEnd().split('\n');
    expect(lines[0]).to.match(/^NAME\s+PHASE/);
    expect(lines.filter((l) => /^NAME/.test(l))).to.have.length(1);
    expect(lines[1]).to.match(/^a\s+Pending\s+NotReconciled/);
    expect(lines.at(-1)).to.match(/^a\s+Succeeded\s+Completed/);
    // every later row lines up under the header printed first
    for (const l of lines.slice(1)) {
      for (const [col, re] of [
        ['PHASE', /^\S+\s+/],
        ['RESULT', /^(\S+\s+){7}/],
      ] as const) {
        expect((re.exec(l)?.[0] ?? '').length, `${col} in ${JSON.stringify(l)}`).to.equal(lines[0]?.indexOf(col));
      }
    }
  });
});
