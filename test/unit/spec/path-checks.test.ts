/** Host paths: fixture, fromFile and results must stay where they belong, also through links. */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { loadSpecs } from '../../../src/spec/loader';
import { checkResults } from '../../../src/spec/path-checks';
import { RealCache } from '../../../src/spec/path-util';
import { cleanupTemp, doc, sandbox, tempDir } from './helpers';

describe('spec/path checks', () => {
  afterEach(cleanupTemp);

  describe('fixture', () => {
    it("resolves against the spec file's folder to a real path, with a digest", async () => {
      const sb = sandbox({ 'sub/a.yaml': doc('a', '  fixture: ../fx\n'), 'fx/in.txt': 'x', 'fx/more/b.txt': 'b' });
      symlinkSync('in.txt', path.join(sb.specs, 'fx', 'link-inside'));
      const r = await sb.load();
      expect(r.errors).to.deep.equal([]);
      expect(r.specs[0]?.spec.fixture).to.equal(path.join(sb.specs, 'fx'));
      expect(r.specs[0]?.spec.fixtureDigest).to.match(/^[0-9a-f]{64}$/);
    });

    it('may be a single file', async () => {
      const r = await sandbox({ 'a.yaml': doc('a', '  fixture: ./input.txt\n'), 'input.txt': 'x' }).load();
      expect(r.errors).to.deep.equal([]);
      expect(r.specs[0]?.spec.fixtureDigest).to.match(/^[0-9a-f]{64}$/);
    });

    it('must not leave the specs folder through a link', async () => {
      const outside = tempDir();
      writeFileSync(path.join(outside, 'secret.txt'), 'host data');
      const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./fx\n') });
      symlinkSync(outside, path.join(sb.specs, 'fx'));
      const r = await sb.load();
      expect(r.errors.map((e) => [e.code, e.path, e.line])).to.deep.equal([['path-escape', 'spec.fixture', 7]]);
      expect(r.specs).to.deep.equal([]);
      expect([...r.protectedNames]).to.deep.equal(['a']);
    });

    it('must not be the specs folder itself', async () => {
      const r = await sandbox({ 'a.yaml': doc('a', '  fixture: .\n') }).load();
      expect(r.errors.map((e) => e.code)).to.deep.equal(['path-escape']);
    });

    it('must not hold a link that points outside the fixture (fixture-link)', async () => {
      const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./fx\n'), 'fx/ok.txt': 'ok', 'other.txt': 'x' });
      symlinkSync('/etc/passwd', path.join(sb.specs, 'fx', 'passwd'));
      symlinkSync('../other.txt', path.join(sb.specs, 'fx', 'sibling'));
      const r = await sb.load();
      expect(r.errors.map((e) => [e.code, e.path])).to.deep.equal([
        ['fixture-link', 'spec.fixture'],
        ['fixture-link', 'spec.fixture'],
      ]);
      expect(r.errors.map((e) => e.message).join('\n')).to.include('fixture link "passwd" points outside the fixture (to "/etc/passwd")');
    });

    it('must not hold a link that escapes through another link', async () => {
      const outside = tempDir();
      const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./fx\n'), 'fx/ok.txt': 'ok' });
      symlinkSync(outside, path.join(sb.specs, 'fx', 'hop'));
      symlinkSync('hop', path.join(sb.specs, 'fx', 'via-hop'));
      const r = await sb.load();
      expect(r.errors.map((e) => e.code)).to.deep.equal(['fixture-link', 'fixture-link']);
    });

    it('must not hold a fifo or a socket (fixture-special)', async () => {
      const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./fx\n'), 'fx/ok.txt': 'ok' });
      execFileSync('mkfifo', [path.join(sb.specs, 'fx', 'pipe')]);
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(path.join(sb.specs, 'fx', 'sock'), resolve));
      try {
        const r = await sb.load();
        expect(r.errors.map((e) => [e.code, e.path])).to.deep.equal([
          ['fixture-special', 'spec.fixture'],
          ['fixture-special', 'spec.fixture'],
        ]);
        expect(r.errors.map((e) => e.message).join('\n')).to.include('fixture entry "pipe" is a fifo');
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('must exist (missing-file), also not as a dangling link', async () => {
      const sb = sandbox({ 'a.yaml': doc('a', '  fixture: ./gone\n') });
      symlinkSync('nowhere', path.join(sb.specs, 'gone'));
      const r = await sb.load();
      expect(r.errors.map((e) => e.code)).to.deep.equal(['missing-file']);
    });
  });

  describe('secret files', () => {
    it('resolve to a real regular file inside the specs folder', async () => {
      const sb = sandbox({ 'a.yaml': doc('a', '  secrets: [{name: t, fromFile: ./s/t}]\n'), 's/t': 'tok' });
      const r = await sb.load();
      expect(r.errors).to.deep.equal([]);
      expect(r.specs[0]?.spec.secrets).to.deep.equal([{ name: 't', fromFile: path.join(sb.specs, 's', 't') }]);
    });

    it('must not leave the specs folder through a link, nor be a folder', async () => {
      const outside = tempDir();
      writeFileSync(path.join(outside, 'key'), 'host secret');
      const sb = sandbox({ 'a.yaml': doc('a', '  secrets: [{name: t, fromFile: ./t}, {name: d, fromFile: ./d}]\n') });
      symlinkSync(path.join(outside, 'key'), path.join(sb.specs, 't'));
      mkdirSync(path.join(sb.specs, 'd'));
      const r = await sb.load();
      expect(r.errors.map((e) => [e.code, e.path])).to.deep.equal([
        ['path-escape', 'spec.secrets[0].fromFile'],
        ['missing-file', 'spec.secrets[1].fromFile'],
      ]);
      expect(r.errors.map((e) => e.message).join('\n')).not.to.include('host secret');
    });
  });

  describe('results', () => {
    it('defaults to the name and is normalized', async () => {
      const r = await sandbox({ 'a.yaml': doc('a'), 'b.yaml': doc('b', '  results: ./x//y/\n') }).load();
      expect(r.errors).to.deep.equal([]);
      expect(r.specs.map((s) => s.spec.results)).to.deep.equal(['a', 'x/y']);
    });

    it('must stay inside the results root, lexically and through links', async () => {
      const sb = sandbox({ 'a.yaml': doc('a', '  results: ../x\n'), 'b.yaml': doc('b', '  results: out/sub\n'), 'c.yaml': doc('c', '  results: .\n') });
      mkdirSync(sb.results, { recursive: true });
      symlinkSync(tempDir(), path.join(sb.results, 'out'));
      const r = await sb.load();
      expect(r.errors.map((e) => [path.basename(e.file), e.code, e.path])).to.deep.equal([
        ['a.yaml', 'path-escape', 'spec.results'],
        ['b.yaml', 'path-escape', 'spec.results'],
        ['c.yaml', 'path-escape', 'spec.results'],
      ]);
    });

    it('must not lie inside the specs folder, nor contain it', async () => {
      const sb = sandbox({ 'a.yaml': doc('a') });
      const inside = await loadSpecs({ specsDir: sb.specs, resultsRoot: path.join(sb.specs, 'out') });
      expect(inside.errors.map((e) => [e.code, e.path, e.line])).to.deep.equal([['path-escape', 'spec.results', 4]]);
      expect(inside.errors[0]?.message).to.include('lies inside the specs folder');
      // A results folder that contains the specs folder would let an attempt write specs too.
      const around = sandbox({});
      writeFileSync(path.join(around.specs, 'a.yaml'), doc('a', `  results: ${path.basename(around.root)}\n`));
      const r = await loadSpecs({ specsDir: around.specs, resultsRoot: path.dirname(around.root) });
      expect(r.errors.map((x) => [x.code, x.path])).to.deep.equal([['path-escape', 'spec.results']]);
      expect(r.errors[0]?.message).to.include('contains the specs folder');
    });
  });
});

describe('spec/path checks: checkResults on one segment and on paths agree', () => {
  afterEach(cleanupTemp);

  it('gives the same verdict and value with or without the one-segment shortcut', async () => {
    const base = tempDir();
    const specs = path.join(base, 'specs');
    const results = path.join(base, 'results');
    mkdirSync(specs);
    mkdirSync(results);
    symlinkSync(tempDir(), path.join(results, 'out'));
    symlinkSync(specs, path.join(results, 'tospecs'));
    const roots = { specsRoot: specs, specsReal: specs, resultsRoot: results, resultsReal: results, realCache: new RealCache() };
    for (const r of ['a', 'a-b_c.d', 'out', 'tospecs', 'x/../a', './a', 'a/b', '..', 'a.']) {
      const short = await checkResults(r, roots);
      // The long way: a root written with a trailing separator is not in resolved form.
      const long = await checkResults(r, { ...roots, resultsRoot: `${results}/`, realCache: new RealCache() });
      const verdict = (c: Awaited<ReturnType<typeof checkResults>>) => (c.ok ? c : c.problems.map((x) => x.code));
      expect(verdict(short), r).to.deep.equal(verdict(long));
    }
    expect((await checkResults('out', roots)).ok).to.equal(false);
    expect((await checkResults('tospecs', roots)).ok).to.equal(false);
    expect(await checkResults('a', roots)).to.deep.equal({ ok: true, value: 'a' });
  });

  it('gives the same once the results root is listed instead of asked about entry by entry (a set of many children)', async () => {
    const base = tempDir();
    const specs = path.join(base, 'specs');
    const results = path.join(base, 'results');
    mkdirSync(specs);
    mkdirSync(path.join(results, 'plain'), { recursive: true });
    writeFileSync(path.join(results, 'file'), 'x');
    symlinkSync(tempDir(), path.join(results, 'out'));
    symlinkSync(specs, path.join(results, 'tospecs'));
    symlinkSync(path.join(results, 'plain'), path.join(results, 'inside'));
    const cache = new RealCache();
    const roots = { specsRoot: specs, specsReal: specs, resultsRoot: results, resultsReal: results, realCache: cache };
    // More children than LISTING_AFTER: the root's entries are then read once.
    for (let i = 0; i < 12; i++) expect(await checkResults(`child-${i}`, roots)).to.deep.equal({ ok: true, value: `child-${i}` });
    expect(cache.noLinkIn(results, 'child-99')).to.equal(true);
    for (const r of ['a', 'plain', 'file', 'out', 'tospecs', 'inside']) {
      const listed = await checkResults(r, roots);
      const alone = await checkResults(r, { ...roots, realCache: new RealCache() });
      const verdict = (c: Awaited<ReturnType<typeof checkResults>>) => (c.ok ? c : c.problems.map((x) => x.message));
      expect(verdict(listed), r).to.deep.equal(verdict(alone));
    }
    expect(['out', 'tospecs', 'inside'].map((r) => cache.noLinkIn(results, r))).to.deep.equal([false, false, false]);
    // A results root that does not exist has no entries, and no links.
    const none = new RealCache();
    const missing = path.join(base, 'none');
    for (let i = 0; i < 12; i++)
      expect(await checkResults(`c${i}`, { ...roots, resultsRoot: missing, resultsReal: missing, realCache: none })).to.deep.equal({
        ok: true,
        value: `c${i}`,
      });
    expect(none.noLinkIn(missing, 'c99')).to.equal(true);
  });
});
