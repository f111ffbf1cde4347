/** The CLI for real: get (selectors, formats), describe, validate, fixture copy, exit codes. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
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
        sb
          .attempt('fx', 'cp -r . /results/ws; ls -la /results/ws > /results/ls.txt; ./deep/er/x.sh', '  fixture: ./fixtures/t\n')
          .replace('name: fx', 'name: fx\n  labels: {suite: demo}'),
        sb.attempt('other', 'true'),
      ].join('---\n'),
    );
    const r = await sb.cli('reconcile', '--once', '--wait');
    if (r.code !== 0) throw new Error(r.stderr);
  });
  after(async function () {
    await sb.destroy();
  });

  it('copies the fixture into workingDir: folders, modes, contents; a link inside it as a link', async function () {
    const ws = path.join(sb.resultsRoot, 'fx', 'run-1', 'results', 'ws');
    expect(await fs.readFile(path.join(ws, 'in.txt'), 'utf8')).to.equal('input\n');
    expect((await fs.stat(path.join(ws, 'deep/er/x.sh'))).mode & 0o777).to.equal(0o755);
    expect(await fs.readlink(path.join(ws, 'link-in'))).to.equal('in.txt');
    expect(await fs.readFile(path.join(sb.resultsRoot, 'fx', 'run-1', 'logs.txt'), 'utf8')).to.equal('deep\n');
  });

  it('get: table, selector, json and yaml', async function () {
    const table = await sb.cli('get');
    expect(table.stdout.split('\n')[0]).to.match(/^NAME\s+PHASE\s+REASON\s+EXIT\s+RUN\s+AGE\s+DURATION\s+RESULT$/);
    expect(table.stdout).to.match(/fx\s+Succeeded\s+Completed\s+0\s+1\s.*\spassed\n/);
    const sel = await sb.cli('get', '-l', 'suite=demo', '-o', 'json');
    const list = JSON.parse(sel.stdout) as { apiVersion: string; kind: string; items: { metadata: { name: string }; status: { phase: string } }[] };
    expect([list.apiVersion, list.kind]).to.deep.equal(['berth.dev/v1', 'List']);
    expect(list.items.map((i) => [i.metadata.name, i.status.phase])).to.deep.equal([['fx', 'Succeeded']]);
    const one = parse((await sb.cli('get', 'other', '-o', 'yaml')).stdout) as Record<string, unknown> & { status: Record<string, unknown> };
    expect(Object.keys(one)).to.deep.equal(['schemaVersion', 'apiVersion', 'kind', 'metadata', 'spec', 'status']);
    expect([one.kind, one.metadata, one.status.exitCode]).to.deep.equal(['Attempt', { name: 'other', labels: {} }, 0]);
    // the whole normalized spec, image and command first, defaults filled in
    expect(Object.keys(one.spec as object).slice(0, 3)).to.deep.equal(['image', 'command', 'workingDir']);
    expect(one.spec).to.deep.include({ image: 'berth/busybox:local', command: ['sh', '-c', 'true'], network: { mode: 'none', egress: [] }, retries: 0 });
    // the pull policy as the user writes it, not berth's internal table of them
    expect(one.spec).to.deep.include({ imagePullPolicy: 'IfNotPresent' }).and.not.have.any.keys('pullPolicies');
    expect(one.spec).to.not.have.any.keys('name', 'labels', 'apiVersion', 'kind');
    // nothing is said twice: the name lives in metadata only, phase and the rest in status only
    expect(one.status).to.not.have.any.keys('name', 'labels', 'apiVersion', 'kind', 'metadata');
    const wide = await sb.cli('get', '-o', 'wide');
    expect(wide.stdout).to.match(/IMAGE\s+IMAGE ID\s+LABELS\s+RESULTS/);
    const missing = await sb.cli('get', 'nope');
    expect([missing.code, missing.stdout]).to.deep.equal([1, '']);
    // what is not found is named with what there is
    expect(missing.stderr).to.match(/^berth: attempt "nope" not found: instance "[^"]+" has \d+ attempts?: [^\n]*\bfx\b[^\n]*\n$/);
    const bad = await sb.cli('get', '-l', 'novalue=(');
    expect(bad.code).to.equal(2);
  });

  it('get -o json matches schemas/get-output.schema.json, for a list and for one item', async function () {
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    const validate = ajv.compile(JSON.parse(await fs.readFile(path.join(__dirname, '..', '..', 'schemas', 'get-output.schema.json'), 'utf8')) as object);
    for (const args of [
      ['get', '-o', 'json'],
      ['get', 'fx', '-o', 'json'],
      ['get', 'fx', 'other', '-o', 'json'],
    ]) {
      const out = JSON.parse((await sb.cli(...args)).stdout) as unknown;
      expect(validate(out), `${args.join(' ')}: ${ajv.errorsText(validate.errors)}`).to.equal(true);
    }
    // and the schema is not a pass-everything: a repeated field is refused
    expect(validate({ apiVersion: 'berth.dev/v1', kind: 'Attempt', metadata: { name: 'x', labels: {} }, status: { phase: 'Pending', name: 'x' } })).to.equal(
      false,
    );
  });

  it('get: kubernetes selectors, never an empty answer for one that cannot be parsed', async function () {
    const names = async (...sel: string[]) => {
      const r = await sb.cli('get', '-o', 'name', ...sel.flatMap((s) => ['-l', s]));
      expect(r.code, r.stderr).to.equal(0);
      return r.stdout;
    };
    expect(await names('suite!=demo')).to.equal('attempt/other\n');
    expect(await names('suite==demo')).to.equal('attempt/fx\n');
    expect(await names('suite in (demo,x)')).to.equal('attempt/fx\n');
    expect(await names('suite notin (demo)')).to.equal('attempt/other\n');
    expect(await names('suite')).to.equal('attempt/fx\n');
    expect(await names('!suite')).to.equal('attempt/other\n');
    expect(await names('suite', 'suite!=demo')).to.equal('');
    for (const bad of ['suite in (demo', 'suite demo', 'suite=demo,', '!suite=demo']) {
      const r = await sb.cli('get', '-l', bad);
      expect(r.code, bad).to.equal(2);
      expect(r.stdout, bad).to.equal('');
      expect(r.stderr, bad).to.match(/^berth: -l: selector .*: column \d+: expected/);
      expect(r.stderr, bad).to.contain(`  ${bad}\n`);
    }
  });

  it('get: several names, -o name, --no-headers; a missing name is an error beside what was found', async function () {
    const two = await sb.cli('get', 'other', 'fx', '--no-headers');
    expect(two.code).to.equal(0);
    expect(
      two.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(/\s+/)[0]),
    ).to.deep.equal(['fx', 'other']);
    const some = await sb.cli('get', 'fx', 'nope', '-o', 'name');
    expect([some.code, some.stdout]).to.deep.equal([1, 'attempt/fx\n']);
    expect(some.stderr).to.match(/^berth: attempt "nope" not found: instance "[^"]+" has 2 attempts: fx, other\n$/);
    // what get -o name prints is what get reads back
    expect((await sb.cli('get', 'attempt/fx', 'attempt/other', '-o', 'name')).stdout).to.equal('attempt/fx\nattempt/other\n');
    const both = JSON.parse((await sb.cli('get', 'fx', 'other', '-o', 'json')).stdout) as { kind: string; items: unknown[] };
    expect([both.kind, both.items.length]).to.deep.equal(['List', 2]);
    const none = await sb.cli('get', '-l', 'suite=nothing');
    expect([none.code, none.stdout, none.stderr]).to.deep.equal([
      0,
      '',
      `No attempts match -l suite=nothing (instance "${sb.instance}", state folder ${sb.stateDir}, specs ${sb.specsDir}).\n`,
    ]);
  });

  it('describe shows spec, status, attestation and resources', async function () {
    const d = await sb.cli('describe', 'fx');
    expect(d.code).to.equal(0);
    for (const want of [
      /Name:\s+fx/,
      /Phase:\s+Succeeded/,
      /Attestation \(inspect, .*\): OK/,
      /ok\s+networks\s+attached to none only/,
      /container\s+berth_.*_fx\s+exited/,
    ]) {
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
