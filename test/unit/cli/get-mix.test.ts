/** `get` whose specs and instance are of two different sources (BERTH_SPECS of one, BERTH_INSTANCE of another) says so (issue 54). */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { run } from '../../../src/cli/index';
import { bufferIo } from '../../../src/cli/io';
import { FakeSandbox } from '../../support/fake-sandbox';

describe('cli get: a table that mixes two sources (fake engine)', function () {
  let sb: FakeSandbox;
  beforeEach(async function () {
    sb = await FakeSandbox.create('mix');
    sb.fake.runTasks(() => ({ code: 0 }));
  });
  afterEach(async function () {
    await sb.dispose();
  });

  it('specs of one folder and records of an instance bound to another: a warning naming both and what to check; none for its own specs', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'true'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    const other = path.join(path.dirname(sb.specsDir), 'other-specs');
    await fs.mkdir(other);
    await fs.writeFile(path.join(other, 'b.yaml'), sb.attempt('b', 'true'));

    const io = bufferIo();
    const args = ['--state', sb.stateDir, '--results-root', sb.resultsRoot, '--instance', sb.instance];
    expect(await run(['node', 'berth', 'get', '--specs', other, ...args], io, { engine: sb.fake })).to.equal(0);
    expect(io.stdout).to.match(/^a\s+Succeeded/m);
    expect(io.stdout).to.match(/^b\s+Pending\s+NotReconciled/m);
    const real = await fs.realpath(sb.specsDir);
    expect(io.stderr).to.equal(
      `berth: warning: this table mixes two sources: instance "${sb.instance}" is bound to the specs folder ${real}, not to the specs folder ${other}: 1 attempt of these specs has no record and 1 record of the instance no spec here; check --specs and --instance (BERTH_SPECS, BERTH_INSTANCE)\n`,
    );

    // its own specs, one attempt not yet reconciled and one record whose spec is gone: no warning
    await sb.write('c.yaml', sb.attempt('c', 'true'));
    await sb.remove('a.yaml');
    const own = await sb.cli('get');
    expect(own.stdout).to.match(/^c\s+Pending\s+NotReconciled/m);
    expect(own.stderr).to.equal('');
  });
});
