/**
 * A sidecar's `ready`, on the real engine: the main container starts only once the sidecar's port
 * accepts, its output says the text, or its command exits 0. Each sidecar here serves only after
 * a second, so the 200 ms fallback would start the main container too early and its fetch fail.
 * A probe that never passes ends the attempt SidecarFailed, saying why, main never started.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

/** The sidecar: after a second, serves "up" on 8081 (and says so, and leaves a mark). */
const LATE_SERVER = 'sleep 1; mkdir -p /tmp/w; echo up > /tmp/w/index.html; httpd -p 8081 -h /tmp/w; touch /tmp/ready; echo serving-now; exec sleep 300';
/** The main container: one fetch, no retry (busybox wget ignores NO_PROXY: -Y off). */
const FETCH = 'wget -Y off -q -O /results/got.txt http://web:8081/';

function spec(sb: Sandbox, name: string, ready: string): string {
  return sb.attempt(
    name,
    FETCH,
    [
      '  network: {mode: isolated}',
      '  sidecars:',
      '    - name: web',
      '      image: berth/busybox:local',
      `      command: [sh, -c, ${JSON.stringify(LATE_SERVER)}]`,
      ready,
      '',
    ].join('\n'),
  );
}

describe('sidecar readiness: tcp, log, command, with a deadline (real engine)', function () {
  this.timeout(120_000);
  let sb: Sandbox;

  before(async function () {
    await requireEngine();
    sb = await Sandbox.create('ready');
  });
  after(async function () {
    await sb?.destroy();
  });

  it('starts the main container once the probe passes; a probe that never passes is SidecarFailed', async function () {
    await sb.write('tcp.yaml', spec(sb, 'rtcp', '      ready: {tcp: 8081}'));
    await sb.write('log.yaml', spec(sb, 'rlog', "      ready: {log: 'serving-now'}"));
    await sb.write('cmd.yaml', spec(sb, 'rcmd', '      ready: {command: [test, -f, /tmp/ready]}'));
    await sb.write('fail.yaml', spec(sb, 'rfail', '      ready: {tcp: 9, deadlineSeconds: 3}'));
    await sb.write('exit.yaml', spec(sb, 'rexit', "      ready: {log: 'never said'}").replace(JSON.stringify(LATE_SERVER), JSON.stringify('echo bye; exit 4')));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stdout + r.stderr).to.equal(5);

    for (const name of ['rtcp', 'rlog', 'rcmd']) {
      const st = await sb.status(name);
      expect([st?.phase, st?.reason], `${name}: ${st?.message}`).to.deep.equal(['Succeeded', 'Completed']);
      expect(await fs.readFile(path.join(sb.resultsRoot, name, 'run-1', 'results', 'got.txt'), 'utf8'), name).to.equal('up\n');
    }
    const fail = await sb.status('rfail');
    expect([fail?.phase, fail?.reason]).to.deep.equal(['Failed', 'SidecarFailed']);
    expect(fail?.message).to.match(/web.* port 9 did not accept within 3 s \(ECONNREFUSED\)/);
    const exit = await sb.status('rexit');
    expect([exit?.phase, exit?.reason]).to.deep.equal(['Failed', 'SidecarFailed']);
    expect(exit?.message).to.match(/web.* exited before its output said "never said"/);
    for (const name of ['rfail', 'rexit']) {
      const mains = await docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=${name}`, `${LABELS.component}=main`] }),
      });
      expect(mains, `${name}: main never created`).to.have.length(0);
    }
  });
});
