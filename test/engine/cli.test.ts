/** The CLI for real: get (selectors, formats), describe, validate, fixture copy, exit codes. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { run } from '../../src/cli/index';
import { bufferIo } from '../../src/cli/io';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

describe('cli (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('cli');
    await sb.write('fixtures/t/in.txt', 'input\n');
    await sb.write('fixtures/t/deep/er/x.sh', '#!/bin/sh\necho deep\n');
    await fs.chmod(path.join(sb.specsDir, 'fixtures/t/deep/er/x.sh'), 0o755);
    await fs.symlink('in.txt', path.join(sb.specsDir, 'fixtures/t/link-in'));
    await sb.write(
      'suite.yaml',
      [
        sb.attempt('fx', 'cp -r . /results/ws; ls -la /results/ws > /results/ls.txt; ./deep/er/x.sh', '  fixture: ./fixtures/t\n').replace('name: fx', 'name: fx\n  labels: {suite: demo}'),
        sb.attempt('other', 'true'),
      ].join('---\n'),
    );
    const r = await sb.cli('reconcile', '--once', '--wait');
    if (r.code !== 0) throw new Error(r.stderr);
  });
  after(async function () {
    await sb.destroy();
  });

  it('copies the fixture into workingDir: folders, modes, contents; links are not followed', async function () {
    const ws = path.join(sb.resultsRoot, 'fx', 'run-1', 'results', 'ws');
    expect(await fs.readFile(path.join(ws, 'in.txt'), 'utf8')).to.equal('input\n');
    expect((await fs.stat(path.join(ws, 'deep/er/x.sh'))).mode & 0o777).to.equal(0o755);
    await fs.access(path.join(ws, 'link-in')).then(
      () => expect.fail('the link was copied'),
      () => undefined,
    );
    expect(await fs.readFile(path.join(sb.resultsRoot, 'fx', 'run-1', 'logs.txt'), 'utf8')).to.equal('deep\n');
  });

  it('get: table, selector, json and yaml', async function () {
    const table = await sb.cli('get');
    expect(table.stdout.split('\n')[0]).to.match(/^NAME\s+PHASE\s+REASON\s+EXIT\s+RUN\s+AGE\s+DURATION$/);
    expect(table.stdout).to.match(/fx\s+Succeeded\s+Completed\s+0\s+1/);
    const sel = await sb.cli('get', '-l', 'suite=demo', '-o', 'json');
    const items = (JSON.parse(sel.stdout) as { items: { name: string; phase: string }[] }).items;
    expect(items.map((i) => [i.name, i.phase])).to.deep.equal([['fx', 'Succeeded']]);
    const one = parse((await sb.cli('get', 'other', '-o', 'yaml')).stdout) as { name: string; exitCode: number };
    expect([one.name, one.exitCode]).to.deep.equal(['other', 0]);
    const wide = await sb.cli('get', '-o', 'wide');
    expect(wide.stdout).to.match(/IMAGE\s+LABELS\s+RESULTS/);
    const missing = await sb.cli('get', 'nope');
    expect(missing.code).to.equal(1);
    const bad = await sb.cli('get', '-l', 'novalue');
    expect(bad.code).to.equal(2);
  });

  it('describe shows spec, status, attestation and resources', async function () {
    const d = await sb.cli('describe', 'fx');
    expect(d.code).to.equal(0);
    for (const want of [/Name:\s+fx/, /Phase:\s+Succeeded/, /Attestation \(inspect, .*\): OK/, /ok\s+networks\s+attached to none only/, /container\s+berth_.*_fx\s+exited/]) {
      expect(d.stdout).to.match(want);
    }
  });

  it('validate: 0 for the folder, 2 and file:line:col for a bad spec; usage errors exit 2', async function () {
    expect((await sb.cli('validate')).code).to.equal(0);
    await sb.write('bad.yaml', sb.attempt('bad', 'true', '  network: {mode: private}\n'));
    const v = await sb.cli('validate');
    expect(v.code).to.equal(2);
    expect(v.stderr).to.match(/bad\.yaml:\d+:\d+: spec\.network\.mode: /);
    await sb.remove('bad.yaml');
    expect((await sb.cli('reconcile', '--wait')).code).to.equal(2);
    expect((await sb.cli('frobnicate')).code).to.equal(2);
    const io = bufferIo();
    expect(await run(['node', 'berth', 'get', '--instance', 'Bad Name', '--state', sb.stateDir], io)).to.equal(2);
    expect(io.stderr).to.match(/--instance "Bad Name": use 1-32 lowercase letters/);
  });
});
