/**
 * Scores in the command line (issue 38), as a user reads them after `reconcile --once --wait`:
 * `get` has a RESULT column (a run that Succeeded and scored 0 is `failed (score 0)`), `get --sets`
 * counts children passed / failed / infra, and `summary` (table, JUnit, Markdown) covers the plain
 * Attempts as a suite of their own, so a CI suite of plain attempts is not `tests="0"`.
 */
import Ajv2020 from 'ajv/dist/2020';
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: sc}
spec:
  matrix: {x: [p, q]}
  template:
    image: berth/busybox:local
    command: [sh, -c, 'if [ \${{ matrix.x }} = p ]; then echo 1; else echo 0; fi > /results/score.json']
  score: {file: score.json, pass: 1}
`;

/** `doc` against schemas/<name> (with the schemas it refers to); the errors when it does not match. */
async function schemaErrors(name: string, doc: unknown): Promise<unknown> {
  const dir = path.join(__dirname, '..', '..', 'schemas');
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  for (const f of (await fs.readdir(dir)).filter((n) => n.endsWith('-output.schema.json') || n === 'common.schema.json')) {
    ajv.addSchema(JSON.parse(await fs.readFile(path.join(dir, f), 'utf8')) as object, f);
  }
  const validate = ajv.getSchema(name);
  if (!validate) throw new Error(`no schema ${name}`);
  return validate(doc) ? null : validate.errors;
}

describe('results in the CLI: RESULT, get --sets, summary of plain attempts (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('results');
    await sb.write('set.yaml', SET);
    await sb.write('ok.yaml', sb.attempt('ok', 'true'));
    await sb.write('bad.yaml', sb.attempt('bad', 'exit 3'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--fail-on', 'none');
    expect(r.code, r.stderr).to.equal(0);
  });
  after(async function () {
    await sb.destroy();
  });

  const cells = (line: string) => line.trim().split(/\s{2,}/);

  it('get: RESULT says how each run counts, with its score; a Succeeded run that scored 0 failed', async function () {
    const r = await sb.cli('get');
    expect(r.code).to.equal(0);
    const lines = r.stdout.trimEnd().split('\n');
    // CELL last (a set's children listed): after the columns berth had
    expect(cells(lines[0] as string)).to.deep.equal(['NAME', 'PHASE', 'REASON', 'EXIT', 'RUN', 'AGE', 'DURATION', 'RESULT', 'CELL']);
    const by = new Map(lines.slice(1).map((l) => [cells(l)[0], [cells(l)[1], cells(l)[7], cells(l)[2]]]));
    expect(lines.slice(1).map((l) => [cells(l)[0], cells(l)[8]])).to.deep.equal([
      ['bad', '-'],
      ['ok', '-'],
      ['sc-p', 'x=p'],
      ['sc-q', 'x=q'],
    ]);
    expect((await sb.cli('get', 'ok')).stdout).to.not.contain('CELL');
    const item = JSON.parse((await sb.cli('get', 'sc-q', '-o', 'json')).stdout) as { metadata: { set?: unknown } };
    expect(item.metadata.set).to.deep.equal({ name: 'sc', coords: { x: 'q' } });
    expect(by.get('sc-p')).to.deep.equal(['Succeeded', 'passed (score 1)', 'Completed']);
    expect(by.get('sc-q')).to.deep.equal(['Succeeded', 'failed (score 0)', 'Completed']);
    expect(by.get('ok')).to.deep.equal(['Succeeded', 'passed', 'Completed']);
    expect(by.get('bad')).to.deep.equal(['Failed', 'failed', 'Error']);
  });

  it('get --sets: the children counted by outcome, each column named once; their phases in -o wide (-o json too)', async function () {
    const r = await sb.cli('get', '--sets');
    const [head, row] = r.stdout.trimEnd().split('\n');
    expect(cells(head as string)).to.deep.equal(['NAME', 'CHILDREN', 'PASSED', 'FAILED', 'INFRA', 'SKIPPED', 'UNFINISHED', 'SOURCE']);
    expect(cells(row as string).slice(0, 7)).to.deep.equal(['sc', '2', '1', '1', '0', '0', '0']);
    const wide = (await sb.cli('get', '--sets', '-o', 'wide')).stdout.trimEnd().split('\n');
    expect(cells(wide[0] as string)).to.deep.equal(['NAME', 'CHILDREN', 'PASSED', 'FAILED', 'INFRA', 'SKIPPED', 'UNFINISHED', 'PHASES', 'SOURCE']);
    expect(cells(wide[1] as string)[7]).to.equal('2 Succeeded');
    expect((await sb.cli('get', '--sets', '--no-headers')).stdout.split('\n')[0]).to.match(/^sc /);
    const json = JSON.parse((await sb.cli('get', '--sets', '-o', 'json')).stdout) as { items: { status: { outcomes: Record<string, number> } }[] };
    expect(await schemaErrors('get-sets-output.schema.json', json)).to.equal(null);
    expect(json.items[0]?.status.outcomes).to.deep.equal({ passed: 1, failed: 1, infra: 0, skipped: 0, unfinished: 0 });
  });

  it('get -o jsonpath, -o custom-columns, --sort-by, as kubectl takes them', async function () {
    expect((await sb.cli('get', '-o', 'jsonpath={.items[*].metadata.name}')).stdout).to.equal('bad ok sc-p sc-q');
    const range = await sb.cli('get', '-l', 'berth.dev/set=sc', '-o', 'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.status.score}{"\\n"}{end}');
    expect(range.stdout).to.equal('sc-p\t1\nsc-q\t0\n');
    const cols = await sb.cli('get', '-o', 'custom-columns=NAME:.metadata.name,EXIT:.status.exitCode', '--sort-by', '.status.exitCode');
    expect(cols.stdout.trimEnd().split('\n').map(cells)).to.deep.equal([
      ['NAME', 'EXIT'],
      ['ok', '0'],
      ['sc-p', '0'],
      ['sc-q', '0'],
      ['bad', '3'],
    ]);
    // the result as the JSON carries it (status.result), and the sets' counts
    expect((await sb.cli('get', 'sc-q', '-o', 'jsonpath={.status.result.outcome} {.status.result.score}')).stdout).to.equal('failed 0');
    const json = JSON.parse((await sb.cli('get', '-o', 'json')).stdout) as unknown;
    expect(await schemaErrors('get-output.schema.json', json)).to.equal(null);
    const sets = await sb.cli('get', '--sets', '-o', 'custom-columns=NAME:.metadata.name,FAILED:.status.outcomes.failed', '--no-headers');
    expect(sets.stdout.trimEnd().split('\n').map(cells)).to.deep.equal([['sc', '1']]);
    expect((await sb.cli('get', '-w', '-o', 'jsonpath={.items}')).code).to.equal(2);
    const bad = await sb.cli('get', '-o', 'jsonpath={.items[?(@.x)]}');
    expect([bad.code, bad.stderr]).to.deep.equal([2, 'berth: ".items[?(@.x)]": filters [?(...)] are not supported at column 7\n']);
    expect((await sb.cli('get', '-o', 'jsonpath')).stderr).to.match(
      /^berth: option '-o, --output <format>' argument 'jsonpath' is invalid\. .*\(jsonpath=\.\.\.\)\.\n/,
    );
  });

  it('logs --all and describe --all / -l: every attempt, or those selected; --all with names is refused', async function () {
    const logs = await sb.cli('logs', '--all', '--tail', '1');
    expect([...logs.stdout.matchAll(/^==> attempt\/(\S+) <==$/gm)].map((m) => m[1])).to.deep.equal(['bad', 'ok', 'sc-p', 'sc-q']);
    const d = await sb.cli('describe', '-l', 'berth.dev/set=sc');
    expect([...d.stdout.matchAll(/^Name: +(\S+)$/gm)].map((m) => m[1])).to.deep.equal(['sc-p', 'sc-q']);
    expect([...(await sb.cli('describe', '--all')).stdout.matchAll(/^Name: +(\S+)$/gm)]).to.have.length(4);
    expect(await sb.cli('logs', 'ok', '--all')).to.deep.include({ code: 2, stderr: 'berth: logs: --all takes no names and no -l\n' });
  });

  it('summary: the plain attempts are a suite of their own, in the table, JSON, JUnit and Markdown', async function () {
    const table = await sb.cli('summary');
    expect(table.stdout).to.match(/^SET sc: 2 attempts, 1 passed, 1 failed/m);
    expect(table.stdout).to.match(/^ATTEMPTS \(in no set\): 2 attempts, 1 passed, 1 failed, 0 infra/m);
    const json = JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as { attempts: { n: number; children: { name: string; outcome: string }[] } };
    expect(await schemaErrors('summary-output.schema.json', json)).to.equal(null);
    expect(json.attempts.children.map((c) => [c.name, c.outcome])).to.deep.equal([
      ['bad', 'failed'],
      ['ok', 'passed'],
    ]);
    const junit = (await sb.cli('summary', '-o', 'junit')).stdout;
    expect(junit).to.contain('<testsuites name="berth" tests="4" failures="2" errors="0" skipped="0">');
    expect(junit).to.match(/<testsuite name="attempts" tests="2" failures="1" errors="0"/);
    expect(junit).to.contain('<testcase classname="attempts" name="ok"');
    // a set named: only that set
    expect((await sb.cli('summary', 'sc', '-o', 'junit')).stdout).to.not.contain('name="attempts"');
    const md = (await sb.cli('summary', '-o', 'markdown')).stdout;
    expect(md).to.contain('| set/sc | 2 | 1 | 1 | 0 | 0 | 0 | 50.0% |');
    expect(md).to.contain('| attempts (in no set) | 2 | 1 | 1 | 0 | 0 | 0 | 50.0% |');
    expect(md).to.contain('| sc-q | set/sc | x=q | failed | Succeeded | Completed | 0 |  |');
    expect(md).to.contain('| bad | attempts (in no set) |  | failed | Failed | Error |  |  |');
  });
});

describe('regrade --all (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);
  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('regrade-all');
  });
  after(async function () {
    await sb.destroy();
  });

  it('grades again every attempt a grader judges, and leaves the others alone; nothing named is a usage error naming --all', async function () {
    await sb.write('g.yaml', sb.attempt('g', 'true', "  grade:\n    command: [sh, -c, 'exit 0']\n"));
    await sb.write('plain.yaml', sb.attempt('plain', 'true'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    const r = await sb.cli('regrade', '--all');
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^attempt\/g regrade: grade 2 of run 1 /);
    expect(r.stdout).to.not.contain('plain');
    expect(await sb.cli('regrade')).to.deep.include({
      code: 2,
      stderr: 'berth: regrade: name the attempts, select them with -l (e.g. -l suite=demo), or give --all\n',
    });
  });
});
