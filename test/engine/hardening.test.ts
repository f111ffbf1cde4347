/** spec.user and spec.readOnlyRootFilesystem on the real engine: applied, owned accordingly, attested, defaults kept. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS } from '../../src/constants';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

describe('hardening fields (real engine)', function () {
  this.timeout(90_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('harden');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  const results = (name: string, file: string) => fs.readFile(path.join(sb.resultsRoot, name, 'run-1', 'results', file), 'utf8');

  it('spec.user runs the task as that uid:gid, with its fixture, secrets, working dir and results its own', async function () {
    await sb.write('fx/in.txt', 'input\n');
    await sb.write('sec/token', 'tok\n');
    const cmd = [
      'id -u > /results/ids; id -g >> /results/ids',
      'stat -c "%u:%g %a" /run/secrets/s /workspace/in.txt /workspace > /results/owners',
      'cat /run/secrets/s >> /results/owners',
      'touch /workspace/new && echo workdir-writable >> /results/owners',
    ].join('; ');
    await sb.write('a.yaml', sb.attempt('a', cmd, '  user: "1234:2345"\n  fixture: ./fx\n  secrets: [{name: s, fromFile: ./sec/token}]\n'));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    expect(await results('a', 'ids')).to.equal('1234\n2345\n');
    expect(await results('a', 'owners')).to.equal('1234:2345 400\n1234:2345 644\n1234:2345 755\ntok\nworkdir-writable\n');
    const st = await fs.stat(path.join(sb.resultsRoot, 'a', 'run-1', 'results'));
    expect([st.uid, st.gid]).to.deep.equal([1234, 2345]);
    const d = await sb.cli('describe', 'a');
    expect(d.stdout).to.include('runs as 1234:2345 (spec.user)');
    expect(d.stdout).to.include('writable root filesystem');
    expect(d.stdout).to.match(new RegExp(`engine logs\\s.*json-file \\(max-file=${DEFAULTS.engineLogMaxFiles}, max-size=${DEFAULTS.engineLogMaxSize}\\)`));
  });

  it('spec.readOnlyRootFilesystem makes / read-only with a writable tmpfs /tmp; /results stays writable', async function () {
    const cmd =
      'if touch /rootfs-probe 2>/dev/null; then echo rootfs-writable; else echo rootfs-read-only; fi > /results/ro; echo t > /tmp/t && cat /tmp/t >> /results/ro';
    await sb.write('a.yaml', sb.attempt('a', cmd, '  readOnlyRootFilesystem: true\n  user: "1000:1000"\n'));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    expect(await results('a', 'ro')).to.equal('rootfs-read-only\nt\n');
    const d = await sb.cli('describe', 'a');
    expect(d.stdout).to.include('read-only root filesystem, tmpfs /tmp');
    expect(d.stdout).to.include('runs as 1000:1000 (spec.user)');
  });

  it('keeps every default: the image user, a writable root filesystem', async function () {
    const cmd = 'id -u > /results/uid; touch /rootfs-probe && echo rootfs-writable >> /results/uid';
    await sb.write('a.yaml', sb.attempt('a', cmd));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    expect(await results('a', 'uid')).to.equal('0\nrootfs-writable\n');
    const d = await sb.cli('describe', 'a');
    expect(d.stdout).to.match(/runs as .*the image's user \(spec\.user not set\)/);
    expect(d.stdout).to.include('writable root filesystem');
  });

  it('refuses readOnlyRootFilesystem with a fixture or secrets, naming the field', async function () {
    await sb.write('fx/in.txt', 'input\n');
    await sb.write('a.yaml', sb.attempt('a', 'true', '  readOnlyRootFilesystem: true\n  fixture: ./fx\n'));
    const r = await sb.cli('validate', sb.specsDir);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/a\.yaml:\d+:\d+: spec\.readOnlyRootFilesystem: cannot be combined with fixture/);
  });
});
