/** What `get` says beside its table when its answer is empty or suspicious (a forgotten --state or --instance, a specs folder that is not there). */
import { expect } from 'chai';
import path from 'node:path';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

describe('get: empty and suspicious answers name the instance, state and source (real engine)', function () {
  this.timeout(90_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('getnotes');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('a forgotten --state: every attempt NotReconciled, and get says where the instance is', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
    await sb.write('b.yaml', sb.attempt('b', 'true'));
    const r = await sb.cli('reconcile', '--once');
    expect(r.code, r.stderr).to.equal(0);
    const elsewhere = path.join(sb.dir, 'forgotten');
    const g = await sb.cliWith({ '--state': elsewhere }, 'get');
    expect(g.code, g.stderr).to.equal(0);
    expect(g.stdout).to.match(/^a +Pending +NotReconciled/m);
    expect(g.stderr).to.equal(
      `berth: warning: every attempt listed is NotReconciled: the state folder holds no record of them (instance "${sb.instance}", state folder ${elsewhere}, specs ${sb.specsDir})\n` +
        `  the engine has 2 attempts of instance "${sb.instance}", reconciled from the specs folder ${sb.specsDir}\n` +
        `  its records are in another state folder: give --state DIR (the one its reconcile used)\n`,
    );
    // the right state folder: no note
    const right = await sb.cli('get');
    expect([right.code, right.stderr]).to.deep.equal([0, '']);
  });

  it('a forgotten --instance: No attempts names the instance, the state folder, the specs, and the instances there', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'true'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    await sb.remove('a.yaml');
    const other = `${sb.instance}-x`;
    const g = await sb.cliWith({ '--instance': other }, 'get');
    expect([g.code, g.stdout]).to.deep.equal([0, '']);
    expect(g.stderr).to.equal(
      `No attempts (instance "${other}", state folder ${sb.stateDir}, specs ${sb.specsDir}).\n` +
        `  state folder ${sb.stateDir} holds instance ${sb.instance}: give --instance NAME\n`,
    );
  });

  it('get --specs /nope says the specs folder cannot be read, and lists the records alone', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'true'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    const nope = path.join(sb.dir, 'nope');
    const g = await sb.cliWith({ '--specs': nope }, 'get');
    expect(g.code).to.equal(0);
    expect(g.stdout).to.match(/^a +Succeeded/m);
    expect(g.stderr).to.equal(`berth: warning: ${nope}: cannot read the specs folder: no such file or folder; listing the records of the state folder alone\n`);
  });
});
