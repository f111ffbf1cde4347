/**
 * Every JSON output of the CLI has a documented shape (schemas/*.schema.json), checked here
 * against what the real commands print after a real run: validate, plan, summary, compare,
 * events, get --sets and version. (get -o json has its own test in cli.test.ts.) Each schema is also
 * shown to refuse a wrong document, so none is a pass-everything.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const SCHEMAS = path.join(__dirname, '..', '..', 'schemas');

const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: grid
spec:
  matrix:
    model: [a, b]
    seed: {range: [0, 2]}
  template:
    image: berth/busybox:local
    command: [sh, -c, 'if [ \${{ matrix.model }} = a ]; then echo 1; else echo 0; fi > /results/score.json']
  score: {file: score.json, pass: 1}
`;

describe('CLI JSON outputs match their schemas (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  let ajv: Ajv2020;
  before(async function () {
    sb = await Sandbox.create('schemas');
    ajv = new Ajv2020({ allErrors: true, strict: true });
    for (const f of (await fs.readdir(SCHEMAS)).filter((n) => n.endsWith('.schema.json'))) {
      ajv.addSchema(JSON.parse(await fs.readFile(path.join(SCHEMAS, f), 'utf8')) as object, f);
    }
    await sb.write('grid.yaml', SET);
    await sb.write('bad.yaml', 'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: bad}\nspec: {image: 7}\n');
  });
  after(async function () {
    await sb?.destroy();
  });

  function schema(name: string): ValidateFunction {
    const v = ajv.getSchema(name);
    if (!v) throw new Error(`schemas/${name} is missing`);
    return v;
  }

  function check(name: string, doc: unknown, what: string): void {
    const v = schema(name);
    expect(v(doc), `${what}: ${ajv.errorsText(v.errors)}`).to.equal(true);
  }

  async function json(...args: string[]): Promise<unknown> {
    const r = await sb.cli(...args);
    expect(r.stdout, `${args.join(' ')}: ${r.stderr}`).to.not.equal('');
    return JSON.parse(r.stdout) as unknown;
  }

  it('validate and plan, with a spec error and a set, before anything ran', async function () {
    const validated = await json('validate', sb.specsDir, '-o', 'json');
    check('validate-output.schema.json', validated, 'validate');
    expect((validated as { errors: { code: string }[] }).errors.map((e) => e.code)).to.include('schema');
    const planned = await json('plan', '-o', 'json');
    check('plan-output.schema.json', planned, 'plan');
    expect(Object.keys((planned as { sets: object }).sets)).to.deep.equal(['grid']);
    // not a pass-everything
    expect(schema('validate-output.schema.json')({ ...(validated as object), extra: 1 })).to.equal(false);
    expect(schema('plan-output.schema.json')({ ...(planned as object), changes: -1 })).to.equal(false);
  });

  it('summary, events and get --sets after the set ran; version', async function () {
    const ran = await sb.cli('reconcile', '--once', '--wait');
    // bad.yaml is invalid: with --wait a settled infrastructure outcome, exit 5 (CONTRACT.md v3), and every child of grid finished
    expect(ran.code, ran.stderr).to.equal(5);
    expect(ran.stdout).to.match(/ 1 infrastructure \(1 Invalid: bad\)\n$/);
    expect(ran.stderr, ran.stderr).to.match(/\b4\/4 done: 2 passed, 2 failed\n/);

    const summary = await json('summary', '-o', 'json');
    check('summary-output.schema.json', summary, 'summary');
    const grid = (summary as { sets: { name: string; passed: number; failed: number; cells: unknown[] }[] }).sets[0];
    expect([grid?.name, grid?.passed, grid?.failed, grid?.cells.length]).to.deep.equal(['grid', 2, 2, 2]);
    expect(schema('summary-output.schema.json')({ ...(summary as object), schemaVersion: 2 })).to.equal(false);

    // model b against a, paired on seed (the samples axis: the set's one cell), both seeds fell
    const compared = await json('compare', 'set/grid', '--by', 'model=a,b', '-o', 'json');
    check('compare-output.schema.json', compared, 'compare');
    const c = (compared as { sets: { comparisons: { cells: number; passed: { before: number; after: number } }[] }[] }).sets[0]?.comparisons[0];
    expect([c?.cells, c?.passed]).to.deep.equal([1, { before: 2, after: 0 }]);
    expect(schema('compare-output.schema.json')({ ...(compared as object), seed: ['0x1'] })).to.equal(false);

    const events = await sb.cli('events', '-o', 'json');
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { reason: string });
    expect(lines.length).to.be.greaterThan(4);
    for (const e of lines) check('events-output.schema.json', e, 'events line');
    expect(schema('events-output.schema.json')({ ...lines[0], type: 'Info' })).to.equal(false);

    for (const args of [
      ['get', '--sets', '-o', 'json'],
      ['get', '--sets', 'grid', '-o', 'json'],
    ]) {
      check('get-sets-output.schema.json', await json(...args), args.join(' '));
    }
    const one = (await json('get', '--sets', 'grid', '-o', 'json')) as { status: { phases: Record<string, number> } };
    expect(one.status.phases.Succeeded).to.equal(4);
    expect((await sb.cli('get', '--sets', '-o', 'name')).stdout).to.equal('attemptset/grid\n');

    const version = await json('version', '-o', 'json');
    check('version-output.schema.json', version, 'version');
    expect((version as { contract: number }).contract).to.equal(4);
  });
});
