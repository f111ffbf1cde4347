/** Attestation of the engine's own log files: capped as berth asks, or the container fails attestation. */
import { expect } from 'chai';
import { attestInspected, failedCause, mainWant } from '../../../src/attest/checks';
import { DEFAULTS } from '../../../src/constants';
import { desiredAttempt } from '../../../src/desired/attempt';
import { FakeEngine } from '../../support/fake-engine';
import { spec } from '../../support/builders';

describe('attestation: the engine log cap', function () {
  const d = desiredAttempt({ instance: 'i', policy: {} }, spec('logs'), 1, '/r/logs/run-1/results');
  const engine = () => {
    const e = new FakeEngine();
    e.addImage({ ref: d.container.create.image });
    return e;
  };
  const logs = (checks: ReturnType<typeof attestInspected>) => checks.find((c) => c.name === 'engine logs');

  it('passes for a container created as desired, and names the cap', async function () {
    const e = engine();
    const id = await e.containers.create(d.container.create);
    const c = logs(attestInspected(await e.containers.inspect(id), mainWant(d)));
    expect(c?.ok).to.equal(true);
    expect(c?.detail).to.equal(`json-file (max-file=${DEFAULTS.engineLogMaxFiles}, max-size=${DEFAULTS.engineLogMaxSize})`);
  });

  it('fails a container whose engine logs are not capped (created without the log config)', async function () {
    const e = engine();
    const { logConfig: _drop, ...host } = d.container.create.host;
    const id = await e.containers.create({ ...d.container.create, host });
    const checks = attestInspected(await e.containers.inspect(id), mainWant(d));
    expect(logs(checks)?.ok).to.equal(false);
    expect(failedCause(checks)).to.include('json-file, no size cap (berth asks json-file (max-file=');
  });
});
