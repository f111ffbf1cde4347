/**
 * berth.yaml and BERTH_* as a user meets them (the built CLI, a child process in a folder of its
 * own; `make test` builds dist/ first): the file holds the flags' defaults, in contexts; a flag
 * wins over the environment, which wins over the file; every flag has its BERTH_*; a broken file
 * is one positioned error, with did-you-mean, and a key named like a secret is refused as one.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

/** The environment without the test run's own BERTH_* (a user's shell has none of them). */
function cleanEnv(over: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BERTH_')));
  return { ...env, ...over };
}

/** `berth ...args` typed in `cwd`. */
function berthIn(cwd: string, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env: cleanEnv(env), encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const ATTEMPT = (name: string, command = 'true') =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [sh, -c, ${JSON.stringify(command)}]\n`;

describe('berth.yaml and BERTH_* (built CLI)', function () {
  this.timeout(90_000);
  let dir: string;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-config-'));
    // Three specs folders told apart by what validate counts: one attempt, two, three.
    for (const [folder, n] of [
      ['one', 1],
      ['two', 2],
      ['three', 3],
    ] as const) {
      for (let i = 0; i < n; i++) {
        await fs.mkdir(path.join(dir, folder), { recursive: true });
        await fs.writeFile(path.join(dir, folder, `a${i}.yaml`), ATTEMPT(`a${i}`));
      }
    }
  });
  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  const counted = (r: { stdout: string }) => /(\d+) attempts?:/.exec(r.stdout)?.[1];

  it('the file, its contexts, the environment and flags: a flag wins over BERTH_*, which wins over the file', async function () {
    await fs.writeFile(
      path.join(dir, 'berth.yaml'),
      ['# defaults for this folder', 'specs: one', 'contexts:', '  ci:', '    specs: two', '  nightly:', '    specs: three', ''].join('\n'),
    );
    expect(counted(berthIn(dir, ['validate']))).to.equal('1');
    expect(counted(berthIn(dir, ['validate', '--context', 'ci']))).to.equal('2');
    expect(counted(berthIn(dir, ['validate'], { BERTH_CONTEXT: 'nightly' }))).to.equal('3');
    expect(counted(berthIn(dir, ['validate', '--context', 'ci'], { BERTH_SPECS: 'three' }))).to.equal('3');
    expect(counted(berthIn(dir, ['validate', '--specs', 'one'], { BERTH_SPECS: 'three' }))).to.equal('1');
    // current-context picks one when neither --context nor BERTH_CONTEXT does.
    await fs.appendFile(path.join(dir, 'berth.yaml'), 'current-context: ci\n');
    expect(counted(berthIn(dir, ['validate']))).to.equal('2');
    // A context that is not there: did you mean.
    expect(berthIn(dir, ['validate', '--context', 'nigthly'])).to.deep.equal({
      code: 2,
      stdout: '',
      stderr: 'berth: --context nigthly: berth.yaml has no such context (did you mean nightly?)\n',
    });
  });

  it('found beside the specs folder, or named by --config / BERTH_CONFIG; its relative paths are relative to it', async function () {
    const elsewhere = path.join(dir, 'elsewhere');
    await fs.mkdir(elsewhere);
    await fs.writeFile(path.join(dir, 'berth.yaml'), 'specs: two\n');
    // From another folder: --specs names a folder beside which a berth.yaml lies; the flag still wins for specs.
    expect(counted(berthIn(elsewhere, ['validate', '--specs', path.join(dir, 'three')]))).to.equal('3');
    expect(counted(berthIn(elsewhere, ['validate', '--config', path.join(dir, 'berth.yaml')]))).to.equal('2');
    expect(counted(berthIn(elsewhere, ['validate'], { BERTH_CONFIG: '../berth.yaml' }))).to.equal('2');
    expect(berthIn(elsewhere, ['validate', '--config', 'nope.yaml'])).to.deep.equal({
      code: 2,
      stdout: '',
      stderr: 'berth: --config nope.yaml: no such file\n',
    });
    expect(berthIn(elsewhere, ['validate', '--context', 'ci'])).to.include({ code: 2, stdout: '' });
  });

  it('a broken file: every problem at file:line:col with the field, a caret and did-you-mean; a secret is refused as one; help still shows', async function () {
    await fs.writeFile(
      path.join(dir, 'berth.yaml'),
      ['instance: evals', 'max-runing: 4', 'contexts:', '  ci:', '    fail-on: infr', '    git-token: ghp_x', ''].join('\n'),
    );
    const r = berthIn(dir, ['validate']);
    expect(r).to.deep.equal({
      code: 2,
      stdout: '',
      stderr: [
        'berth: berth.yaml is not a valid berth configuration:',
        'berth.yaml:2:1: max-runing: unknown field "max-runing" (did you mean "max-running"?) [schema]',
        ' 2 | max-runing: 4',
        '   | ^',
        'berth.yaml:5:14: contexts.ci.fail-on: must be one of failed, infra, none (got "infr") (did you mean "infra"?) [schema]',
        ' 5 |     fail-on: infr',
        '   |              ^',
        // no excerpt: the line holds the secret
        'berth.yaml:6:5: contexts.ci.git-token: secrets never go in berth.yaml (it is shown, copied and committed); name where berth reads one instead (git-token-file, git-token-env, webhook-secret-file, notify-secret-env, ...) [schema]',
        '',
      ].join('\n'),
    });
    const help = berthIn(dir, ['get', '--help']);
    expect([help.code, help.stderr]).to.deep.equal([0, '']);
    expect(help.stdout).to.contain('--config <file>').and.to.contain('--context <name>');

    // A value the flag's own parser refuses is placed at the value too.
    await fs.writeFile(path.join(dir, 'berth.yaml'), 'default-deadline: 3x\n');
    expect(berthIn(dir, ['reconcile', '--once']).stderr).to.equal(
      [
        'berth: berth.yaml is not a valid berth configuration:',
        'berth.yaml:1:19: default-deadline: --default-deadline must be a duration such as 500ms, 30s, 2m, 1h or 1h30m (a bare number is seconds) [schema]',
        ' 1 | default-deadline: 3x',
        '   |                   ^',
        '',
      ].join('\n'),
    );
    await fs.writeFile(path.join(dir, 'berth.yaml'), 'state: [a\n');
    expect(berthIn(dir, ['get']))
      .to.include({ code: 2, stdout: '' })
      .and.to.have.property('stderr')
      .that.match(/^berth\.yaml:1:8: .*\[yaml-syntax\]$/m);
  });

  it('log-format: json in the file makes stderr JSON, as the flag does', async function () {
    await fs.writeFile(path.join(dir, 'one', 'bad.yaml'), 'kind: Attempt\n');
    await fs.writeFile(path.join(dir, 'berth.yaml'), 'specs: one\nlog-format: json\n');
    const r = berthIn(dir, ['validate']);
    expect(r.code).to.equal(2);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines.length).to.be.greaterThan(0);
    for (const l of lines) expect(() => JSON.parse(l) as unknown, l).to.not.throw();
  });

  it('every flag has a BERTH_*: a value is parsed as the flag parses it, a boolean takes true/false/1/0', async function () {
    expect(berthIn(dir, ['validate'], { BERTH_LOG_FORMAT: 'xml' })).to.deep.include({
      code: 2,
      stderr: 'berth: BERTH_LOG_FORMAT=xml: Allowed choices are text, json.\n',
    });
    expect(berthIn(dir, ['reconcile'], { BERTH_ONCE: 'maybe' })).to.deep.include({
      code: 2,
      stderr: 'berth: BERTH_ONCE=maybe: must be true or false (or 1, 0)\n',
    });
    // --output of validate, by its BERTH_*: JSON on stdout.
    const json = berthIn(dir, ['validate', '--specs', 'two'], { BERTH_OUTPUT: 'json' });
    expect(json.code).to.equal(0);
    expect((JSON.parse(json.stdout) as { attempts: unknown[] }).attempts).to.have.length(2);
  });

  describe('with the engine', function () {
    before(requireEngine);
    let sb: Sandbox;
    beforeEach(async function () {
      sb = await Sandbox.create('config');
      await sb.write('a.yaml', ATTEMPT('a'));
    });
    afterEach(async function () {
      await sb.destroy();
    });

    it('reconcile and get with no flags at all: berth.yaml says where', async function () {
      await fs.writeFile(
        path.join(sb.dir, 'berth.yaml'),
        [`instance: ${sb.instance}`, 'specs: specs', 'state: state', 'results-root: results', 'fail-on: none', 'timeout: 2m', ''].join('\n'),
      );
      const rec = berthIn(sb.dir, ['reconcile', '--once', '--wait']);
      expect(rec.code, rec.stderr).to.equal(0);
      expect(berthIn(sb.dir, ['get', 'a', '--no-headers']).stdout).to.match(/^a +Succeeded/);
      // The environment wins over the file: another instance has not run it.
      expect(berthIn(sb.dir, ['get', 'a', '--no-headers'], { BERTH_INSTANCE: `${sb.instance}-other` }).stdout).to.match(/^a +Pending/);
      // timeout in the file is for --once --wait only: a plan (no --timeout) and a controller are not refused for it.
      expect(berthIn(sb.dir, ['plan']).code).to.equal(0);
    });

    it("default-deadline in the file: reconcile's runs and rerun's get it (rerun takes no such flag)", async function () {
      await fs.writeFile(
        path.join(sb.dir, 'berth.yaml'),
        [`instance: ${sb.instance}`, 'state: state', 'results-root: results', 'default-deadline: 10m', ''].join('\n'),
      );
      expect(berthIn(sb.dir, ['reconcile', '--once', '--wait']).code).to.equal(0);
      expect((await sb.status('a'))?.deadlineSource).to.equal('default');
      const rerun = berthIn(sb.dir, ['rerun', 'a']);
      expect(rerun.code, rerun.stderr).to.equal(0);
      const st = await sb.status('a');
      expect([st?.run, st?.deadlineSource]).to.deep.equal([2, 'default']);
    });
  });
});
