/** The example specs in specs/ must stay valid: they are what `make run` and new users start from. */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { runValidate } from '../../../src/cli/commands/validate';
import { EXIT } from '../../../src/constants';
import { loadSpecs } from '../../../src/spec/loader';
import { REPO, cleanupTemp, tempDir } from './helpers';

const SPECS = path.join(REPO, 'specs');

describe('specs/ examples', () => {
  afterEach(cleanupTemp);

  it('load with zero errors', async () => {
    const r = await loadSpecs({ specsDir: SPECS, resultsRoot: tempDir() });
    expect(r.errors).to.deep.equal([]);
    expect(r.specs.map((s) => s.spec.name).sort()).to.deep.equal(
      [
        'demo-isolated',
        'demo-sum',
        'demo-volume',
        'egress-allowlist',
        'fixture-copy',
        'hello',
        'secret-file',
        'eval-demo-m1-add',
        'eval-demo-m1-count',
        'eval-demo-m2-add',
        'eval-demo-m2-count',
      ].sort(),
    );
    for (const s of r.specs) {
      expect(s.spec.image, s.spec.name).to.equal('berth/busybox:local');
      expect(s.spec.deadlineSeconds, s.spec.name).to.be.a('number');
      expect(
        s.spec.secrets.every((x) => x.fromFile !== undefined),
        `${s.spec.name}: no fromEnv secrets in examples`,
      ).to.equal(true);
    }
    expect(r.specs.filter((s) => s.spec.labels.suite === 'demo').map((s) => s.relFile)).to.deep.equal([
      'suite/demo.yaml',
      'suite/demo.yaml',
      'suite/demo.yaml',
    ]);
  });

  it('point editors at the schema on their first line', async () => {
    const r = await loadSpecs({ specsDir: SPECS, resultsRoot: tempDir() });
    for (const rel of new Set(r.specs.map((s) => s.relFile))) {
      const first = readFileSync(path.join(SPECS, rel), 'utf8').split('\n')[0] ?? '';
      const m = /^# yaml-language-server: \$schema=(\S+)$/.exec(first);
      expect(m, rel).to.not.equal(null);
      expect(path.resolve(SPECS, path.dirname(rel), m?.[1] ?? ''), rel).to.equal(path.join(REPO, 'schemas', 'attempt.schema.json'));
    }
  });

  it('pass `berth validate`', async () => {
    let out = '';
    const code = await runValidate([SPECS], { output: 'text', resultsRoot: tempDir() }, { out: (s) => (out += s), err: () => undefined });
    expect(code).to.equal(EXIT.ok);
    expect(out).to.match(/all valid/);
  });
});
