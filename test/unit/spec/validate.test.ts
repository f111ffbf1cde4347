/** `berth validate`: exit codes, compiler-style text, the summary line and `-o json`. */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { runValidate, summary, validateCacheIn } from '../../../src/cli/commands/validate';
import { EXIT } from '../../../src/constants';
import { clearSpecFileCache } from '../../../src/spec/file-cache';
import type { LoadReport } from '../../../src/spec/loader';
import { cleanupTemp, doc, REPO, sandbox, tempDir } from './helpers';

const BIN = path.join(REPO, 'bin', 'berth-src.cjs');

async function run(paths: string[], output: 'text' | 'json', resultsRoot: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runValidate(paths, { output, resultsRoot }, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

describe('cli/validate', () => {
  afterEach(cleanupTemp);

  it('returns 0 and says all valid when everything is', async () => {
    const sb = sandbox({ 'a.yaml': doc('a'), 'b.yaml': `${doc('b')}---\n${doc('c')}` });
    const r = await run([sb.specs], 'text', sb.results);
    expect(r).to.deep.equal({ code: EXIT.ok, out: '2 files, 3 attempts: all valid\n', err: '' });
  });

  it('returns 2 and prints each error with its source line and a caret', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', '  network: {mode: private}\n'), 'b.yaml': doc('b') });
    const r = await run([sb.specs], 'text', sb.results);
    expect(r.code).to.equal(EXIT.usage);
    const file = path.relative(process.cwd(), path.join(sb.specs, 'a.yaml'));
    const shown = file.startsWith('..') ? path.join(sb.specs, 'a.yaml') : file;
    expect(r.err).to.equal(
      `${shown}:7:19: spec.network.mode: must be one of none, isolated, bridge (got "private") [schema]\n` +
        ' 7 |   network: {mode: private}\n' +
        '   |                   ^\n',
    );
    expect(r.out).to.equal('2 files, 2 attempts: 1 valid, 1 invalid (1 error)\n');
  });

  it('prints the stable JSON form with -o json', async () => {
    const sb = sandbox({ 'a.yaml': doc('a'), 'b.yaml': doc('b', '  retries: -1\n') });
    const r = await run([sb.specs], 'json', sb.results);
    expect(r.code).to.equal(EXIT.usage);
    expect(r.err).to.equal('');
    const body = JSON.parse(r.out) as { valid: boolean; files: number; attempts: string[]; errors: Record<string, unknown>[] };
    expect(body.valid).to.equal(false);
    expect(body.files).to.equal(2);
    expect(body.attempts).to.deep.equal(['a']);
    expect(body.errors).to.have.length(1);
    expect(body.errors[0]).to.include({ line: 7, col: 12, path: 'spec.retries', code: 'schema', message: 'must be at least 0 (got -1)' });
    expect(Object.keys(body.errors[0] ?? {}).sort()).to.deep.equal(['attempt', 'code', 'col', 'file', 'line', 'message', 'path']);
    expect(body.errors[0]).to.include({ attempt: 'b' });
  });

  it('warns, never fails, about a secret too short to be redacted (as this process reads it)', async () => {
    const secrets =
      '  secrets:\n    - {name: pin, fromFile: ./pin}\n    - {name: short, fromEnv: SHORT}\n    - {name: long, fromEnv: LONG}\n    - {name: unset, fromEnv: UNSET}\n';
    const sb = sandbox({ 'a.yaml': doc('a', secrets), pin: '123\n' });
    let out = '';
    let err = '';
    const env = { SHORT: 'ab', LONG: 'long-enough' };
    const code = await runValidate([sb.specs], { output: 'text', resultsRoot: sb.results, env }, { out: (s) => (out += s), err: (s) => (err += s) });
    expect(code).to.equal(EXIT.ok);
    expect(out).to.equal('1 file, 1 attempt: all valid\n');
    expect(err).to.equal(
      'warning: attempt a: secret pin is shorter than 4 bytes: it will not be redacted from what berth writes for its runs\n' +
        'warning: attempt a: secret short is shorter than 4 bytes: it will not be redacted from what berth writes for its runs\n',
    );
    let json = '';
    await runValidate([sb.specs], { output: 'json', resultsRoot: sb.results, env }, { out: (s) => (json += s), err: () => undefined });
    expect((JSON.parse(json) as { warnings: string[] }).warnings).to.have.length(2);
  });

  it('shows every error of one spec: a bad field and a missing fixture and secret file, not the first alone (issue 54)', async () => {
    const sb = sandbox({
      'a.yaml': doc('a', '  retries: -1\n  fixture: ./missing\n  secrets:\n    - {name: tok, fromFile: ./nofile}\n'),
      // a path field that is itself malformed is the schema's error alone
      'b.yaml': doc('b', '  fixture: 7\n'),
    });
    const r = await run([sb.specs], 'json', sb.results);
    expect(r.code).to.equal(EXIT.usage);
    const body = JSON.parse(r.out) as { errors: { attempt: string; path: string; code: string }[] };
    expect(body.errors.filter((e) => e.attempt === 'a').map((e) => [e.path, e.code])).to.deep.equal([
      ['spec.retries', 'schema'],
      ['spec.fixture', 'missing-file'],
      ['spec.secrets[0].fromFile', 'missing-file'],
    ]);
    const b = body.errors.filter((e) => e.attempt === 'b');
    expect(b).to.not.deep.equal([]);
    expect(b.every((e) => e.path === 'spec.fixture' && e.code === 'schema')).to.equal(true);
  });

  it('reports a path that does not exist', async () => {
    const sb = sandbox({});
    const r = await run([path.join(sb.root, 'nope.yaml')], 'text', sb.results);
    expect(r.code).to.equal(EXIT.usage);
    expect(r.err).to.match(/nope\.yaml:1:1: no such file or folder \[io\]\n$/);
  });

  it('validate . inside the specs folder: the default results root there is one warning, not an error of each spec with results (issue 54)', async () => {
    const sb = sandbox({ 'a.yaml': doc('a', '  results: out-a\n'), 'b.yaml': doc('b', '  results: out-b\n') });
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('BERTH_')) delete env[k];
    // the command line as a user runs it there: no --state, no --results-root
    const here = spawnSync(process.execPath, [BIN, 'validate', '.'], { cwd: sb.specs, env, encoding: 'utf8' });
    expect([here.status, here.stdout, here.stderr]).to.deep.equal([
      EXIT.ok,
      '2 files, 2 attempts: all valid\n',
      "warning: the default results root .berth/results lies inside .: reconcile run from this folder would refuse every attempt's results there; run berth from another folder or give --results-root\n",
    ]);
    const inSpecs = path.join(sb.specs, '.berth', 'results');
    const io = () => {
      const o = { out: '', err: '' };
      return { o, io: { out: (t: string) => (o.out += t), err: (t: string) => (o.err += t) } };
    };
    // a results root given inside the specs folder is the user's choice: each spec with results is refused, where it says so
    const given = io();
    expect(await runValidate([sb.specs], { output: 'text', resultsRoot: inSpecs }, given.io)).to.equal(EXIT.usage);
    expect(given.o.err.match(/lies inside the specs folder/g)).to.have.length(2);
    // with the default, the specs are still checked as they are
    writeFileSync(path.join(sb.specs, 'b.yaml'), doc('b', '  retries: -1\n'));
    const bad = io();
    expect(await runValidate([sb.specs], { output: 'json', resultsRoot: inSpecs, resultsRootIsDefault: true }, bad.io)).to.equal(EXIT.usage);
    const body = JSON.parse(bad.o.out) as { errors: { path: string }[]; warnings: string[] };
    expect(body.errors.map((e) => e.path)).to.deep.equal(['spec.retries']);
    expect(body.warnings).to.have.length(1);
  });

  it('keeps the outcomes of unchanged files in its own folder of the user cache, and reads an edited file again (issue 55)', async () => {
    const sb = sandbox({ 'a.yaml': doc('kept-a'), 'b.yaml': doc('kept-b') });
    for (const f of ['a.yaml', 'b.yaml']) utimesSync(path.join(sb.specs, f), new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));
    const cache = tempDir();
    const cacheIn = validateCacheIn({ BERTH_CACHE_DIR: cache });
    expect(cacheIn).to.equal(path.join(cache, 'validate'));
    expect(validateCacheIn({ BERTH_CACHE_DIR: '' }), 'BERTH_CACHE_DIR empty: nothing kept').to.equal(undefined);
    const json = async () => {
      clearSpecFileCache(); // a new process: nothing kept in memory
      let out = '';
      const code = await runValidate(
        [sb.specs],
        { output: 'json', resultsRoot: sb.results, cacheIn: cacheIn as string },
        { out: (t) => (out += t), err: () => undefined },
      );
      return { code, body: JSON.parse(out) as { attempts: string[]; errors: { path: string }[] } };
    };
    expect((await json()).body.attempts).to.deep.equal(['kept-a', 'kept-b']);
    const dir = path.join(cacheIn as string, 'cache');
    const files = existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith('.json')) : [];
    expect(files, 'one cache file').to.have.length(1);
    // what the next run shows comes from the cache: a name rewritten in it is the name validate reports
    const file = path.join(dir, files[0] as string);
    writeFileSync(file, readFileSync(file, 'utf8').replaceAll('"kept-b"', '"from-the-cache"'));
    expect((await json()).body.attempts).to.deep.equal(['kept-a', 'from-the-cache']);
    // an edited file is read again
    writeFileSync(path.join(sb.specs, 'b.yaml'), doc('kept-b', '  retries: -1\n'));
    const edited = await json();
    expect(edited.code).to.equal(EXIT.usage);
    expect(edited.body.errors.map((e) => e.path)).to.deep.equal(['spec.retries']);
  });

  it('validates specs/ by default', async () => {
    const cwd = process.cwd();
    const sb = sandbox({ 'a.yaml': doc('a') });
    process.chdir(sb.root);
    try {
      const r = await run([], 'text', sb.results);
      expect(r).to.deep.equal({ code: EXIT.ok, out: '1 file, 1 attempt: all valid\n', err: '' });
    } finally {
      process.chdir(cwd);
    }
  });

  it('summarizes unreadable files and empty folders', () => {
    const base: LoadReport = {
      specs: [],
      errors: [],
      protectedNames: new Set(),
      unreadableFiles: new Set(),
      unreadableFolders: new Set(),
      files: [],
      documents: 0,
    };
    expect(summary(base)).to.equal('0 files, 0 attempts: no spec files found');
    const err = { file: 'a.yaml', line: 1, col: 1, path: '', code: 'yaml-syntax' as const, message: 'x' };
    expect(summary({ ...base, files: ['a.yaml', 'b.yaml'], documents: 1, errors: [err, err], unreadableFiles: new Set(['a.yaml']) })).to.equal(
      '2 files (1 unreadable), 1 attempt: 0 valid, 1 invalid (2 errors)',
    );
  });

  it('counts an AttemptSet as its children, and lists sets in -o json', async () => {
    const set = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: s}
spec:
  matrix: {x: [a, b, c]}
  template: {image: berth/busybox:local, command: [echo, '\${{ matrix.x }}']}
`;
    const sb = sandbox({ 'a.yaml': doc('a'), 's.yaml': set });
    const text = await run([sb.specs], 'text', sb.results);
    expect(text.out).to.equal('2 files, 4 attempts (1 AttemptSet): all valid\n');
    const body = JSON.parse((await run([sb.specs], 'json', sb.results)).out) as { attempts: string[]; sets: unknown[] };
    expect(body.attempts).to.deep.equal(['a', 's-a', 's-b', 's-c']);
    expect(body.sets).to.deep.equal([{ name: 's', valid: true, children: ['s-a', 's-b', 's-c'] }]);
    // A set whose matrix cannot be expanded is invalid, its file protected, but not "unreadable".
    const bad = sandbox({ 's.yaml': set.replace('[a, b, c]', '[]') });
    expect((await run([bad.specs], 'text', bad.results)).out).to.equal(
      '1 file, 0 attempts (1 AttemptSet): 0 valid, 0 invalid, 1 AttemptSet invalid (1 error)\n',
    );
  });
});
