/**
 * Two networks of one name for one attempt (two writers raced; the engine's duplicate check is
 * not atomic): while both exist every use of the name is refused as ambiguous. A pass keeps one
 * and removes the other, and the attempt runs.
 */
import { expect } from 'chai';
import { LABELS } from '../../src/constants';
import { desiredAttempt } from '../../src/desired/attempt';
import { loadSpecs } from '../../src/spec/loader';
import { docker, requireEngine, TEST_LABEL, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';

describe('duplicate networks (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('dupnet');
  });
  after(async function () {
    await sb.destroy();
  });

  const networksOf = async (attempt: string) =>
    docker.listNetworks({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=${attempt}`] }) });

  it('a second labeled network with the attempt’s network name is removed and the attempt runs; one appearing beside the running attempt too', async function () {
    await sb.write('d.yaml', sb.attempt('d', 'sleep 300', '  network: {mode: isolated}\n'));
    const load = await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot });
    const loaded = load.specs.find((s) => s.spec.name === 'd');
    const net = loaded && desiredAttempt({ instance: sb.instance, policy: {} }, loaded, 1, sb.resultsRoot).network;
    if (!net) throw new Error('attempt d has no network');
    // What two racing writers leave: two networks with berth's labels and one name.
    const makeOne = async () =>
      (
        await docker.createNetwork({
          Name: net.name,
          Labels: { ...net.labels, [TEST_LABEL]: TEST_RUN },
          Internal: true,
          Driver: 'bridge',
          CheckDuplicate: false,
        })
      ).id;
    const first = await makeOne();
    await makeOne();
    expect(await networksOf('d')).to.have.length(2);

    const r = await sb.cli('reconcile', '--once');
    expect(r.code, r.stderr).to.equal(0);
    const st = await sb.status('d');
    expect(st?.phase, st?.message).to.equal('Running');
    const left = await networksOf('d');
    expect(left.map((n) => n.Id)).to.deep.equal([first]);
    const main = await docker.getContainer(st?.containerId ?? '').inspect();
    expect(Object.values(main.NetworkSettings.Networks).map((n) => n.NetworkID)).to.deep.equal([first]);

    // A duplicate made while the attempt runs goes too; the attempt keeps running on its own.
    await makeOne();
    const again = await sb.cli('reconcile', '--once');
    expect(again.code, again.stderr).to.equal(0);
    expect((await networksOf('d')).map((n) => n.Id)).to.deep.equal([first]);
    expect((await docker.getContainer(main.Id).inspect()).State.Running).to.equal(true);
  });
});
