/**
 * The bad-input corpus: every file in test/fixtures/bad is one distinct failure, and
 * expected.json says which error code it must produce, at which line (and field path). Some
 * failures cannot be committed (a file over the size cap, links and fifos inside a fixture): they
 * are made in a temporary folder here.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { runValidate } from '../../../src/cli/commands/validate';
import { DEFAULTS, EXIT } from '../../../src/constants';
import { loadPaths } from '../../../src/spec/loader';
import type { SpecError } from '../../../src/spec/types';
import { BAD, cleanupTemp, doc, sandbox, tempDir } from './helpers';

interface Expected {
  code: string;
  line: number;
  path?: string;
}

const expected = JSON.parse(readFileSync(path.join(BAD, 'expected.json'), 'utf8')) as Record<string, Expected>;

function matches(e: SpecError, x: Expected): boolean {
  return e.code === x.code && e.line === x.line && (x.path === undefined || e.path === x.path);
}

function show(errors: SpecError[]): string {
  return errors.map((e) => `${e.line}:${e.col} ${e.path} [${e.code}] ${e.message}`).join('\n');
}

async function validate(paths: string[], resultsRoot: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runValidate(paths, { output: 'text', resultsRoot }, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

describe('spec/bad corpus', () => {
  let results: string;
  before(() => {
    results = tempDir('berth-results-');
  });
  after(cleanupTemp);

  it('has at least 45 committed cases, each listed in expected.json', () => {
    const files = readdirSync(BAD).filter((f) => f !== 'expected.json');
    expect(files.length).to.be.at.least(45);
    expect(files.sort()).to.deep.equal(Object.keys(expected).sort());
  });

  for (const [file, x] of Object.entries(expected)) {
    it(`${file}: ${x.code} at line ${x.line}${x.path ? ` (${x.path})` : ''}`, async () => {
      const abs = path.join(BAD, file);
      const r = await loadPaths([abs], { resultsRoot: results });
      expect(
        r.errors.some((e) => matches(e, x)),
        show(r.errors),
      ).to.equal(true);
      expect(r.errors.every((e) => e.file.endsWith(file))).to.equal(true);
      const v = await validate([abs], results);
      expect(v.code).to.equal(EXIT.usage);
      expect(v.err).to.include(`${file}:${x.line}:`);
      expect(v.err).to.match(new RegExp(`${file.replace(/\./g, '\\.')}:\\d+:\\d+: `));
      expect(v.out).to.match(/invalid|unreadable/);
    });
  }

  it('finds every expected error when the whole corpus is loaded at once', async () => {
    const r = await loadPaths([BAD], { resultsRoot: results });
    for (const [file, x] of Object.entries(expected)) {
      const mine = r.errors.filter((e) => e.file.endsWith(`/${file}`));
      expect(
        mine.some((e) => matches(e, x)),
        `${file}\n${show(mine)}`,
      ).to.equal(true);
    }
    // Only the first document of second-document-invalid.yaml is valid.
    expect(r.specs.map((s) => s.spec.name)).to.deep.equal(['bad-second-ok']);
  });

  describe('generated cases', () => {
    it('too-large: a file over the size cap, at 1:1', async () => {
      const sb = sandbox({ 'big.yaml': `${doc('bad-big')}# ${'x'.repeat(DEFAULTS.maxSpecFileBytes)}\n` });
      const r = await sb.load();
      expect(r.errors.map((e) => [e.code, e.line, e.col])).to.deep.equal([['too-large', 1, 1]]);
      const v = await validate([sb.specs], sb.results);
      expect(v.code).to.equal(EXIT.usage);
      expect(v.err).to.include('big.yaml:1:1: ');
    });

    it('fixture-link: a fixture holding a link to outside it', async () => {
      const sb = sandbox({ 'a.yaml': doc('bad-fixture-link', '  fixture: ./fx\n'), 'fx/ok.txt': 'ok' });
      symlinkSync('../../../../etc/hostname', path.join(sb.specs, 'fx', 'escape'));
      const r = await sb.load();
      expect(r.errors.map((e) => [e.code, e.line, e.path])).to.deep.equal([['fixture-link', 7, 'spec.fixture']]);
      const v = await validate([sb.specs], sb.results);
      expect(v.code).to.equal(EXIT.usage);
      expect(v.err).to.include('a.yaml:7:12: spec.fixture: fixture link "escape" points outside the fixture');
    });

    it('fixture-special: a fixture holding a fifo', async () => {
      const sb = sandbox({ 'a.yaml': doc('bad-fixture-fifo', '  fixture: ./fx\n'), 'fx/ok.txt': 'ok' });
      execFileSync('mkfifo', [path.join(sb.specs, 'fx', 'pipe')]);
      const r = await sb.load();
      expect(r.errors.map((e) => [e.code, e.line, e.path])).to.deep.equal([['fixture-special', 7, 'spec.fixture']]);
    });

    it('path-escape: a fixture that is a link out of the specs folder', async () => {
      const sb = sandbox({ 'a.yaml': doc('bad-fixture-linked', '  fixture: ./fx\n') });
      symlinkSync(tempDir(), path.join(sb.specs, 'fx'));
      const r = await sb.load();
      expect(r.errors.map((e) => [e.code, e.line])).to.deep.equal([['path-escape', 7]]);
    });
  });
});
