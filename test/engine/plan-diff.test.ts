/**
 * `plan` says what a replace changes (issue 54): for an attempt run under one spec and edited,
 * each field of the hashed spec that moved, Terraform's way (`~ spec.command: a -> b`), secrets by
 * name only; `-o json` carries the same as `diff` (schemas/plan-output.schema.json).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const SCHEMAS = path.resolve(__dirname, '..', '..', 'schemas');

describe('plan: the fields a replace changes (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  it('a finished attempt whose command, env and secrets changed: each field, secrets by name, in text and JSON', async function () {
    const sb = await Sandbox.create('plandiff');
    try {
      process.env.PLAN_DIFF_TOKEN = 'sekret-value-1';
      await sb.write('a.yaml', sb.attempt('a', 'echo x2', '  env: {KEEP: "1", GONE: "2"}\n'));
      const r = await sb.cli('reconcile', '--once', '--wait');
      expect(r.code, r.stderr).to.equal(0);
      const kept = await fs.readFile(path.join(sb.stateDir, sb.instance, 'run-specs', 'a.json'), 'utf8');
      expect(JSON.parse(kept)).to.include({ schemaVersion: 1 });
      await sb.write('a.yaml', sb.attempt('a', 'echo x3', '  env: {KEEP: "1", NEW: "3"}\n  secrets: [{name: token, fromEnv: PLAN_DIFF_TOKEN}]\n'));
      const p = await sb.cli('plan');
      expect(p.code, p.stderr).to.equal(0);
      const lines = p.stdout.split('\n');
      const at = lines.findIndex((l) => l.startsWith('attempt a: replace'));
      expect(at, p.stdout).to.be.greaterThan(-1);
      expect(lines.slice(at + 1, at + 5)).to.deep.equal([
        '  ~ spec.command: ["sh","-c","echo x2"] -> ["sh","-c","echo x3"]',
        '  - spec.env.GONE: "2"',
        '  + spec.env.NEW: "3"',
        '  + spec.secrets[token]',
      ]);
      const j = await sb.cli('plan', '-o', 'json');
      const doc = JSON.parse(j.stdout) as { actions: { attempt: string; diff?: unknown }[] };
      expect(doc.actions.find((x) => x.attempt === 'a')?.diff).to.deep.equal([
        { path: 'spec.command', from: ['sh', '-c', 'echo x2'], to: ['sh', '-c', 'echo x3'] },
        { path: 'spec.env.GONE', from: '2' },
        { path: 'spec.env.NEW', to: '3' },
        { path: 'spec.secrets[token]', to: 'added' },
      ]);
      const ajv = new Ajv2020({ strict: true, allErrors: true });
      ajv.addSchema(JSON.parse(await fs.readFile(path.join(SCHEMAS, 'common.schema.json'), 'utf8')) as object);
      const valid = ajv.compile(JSON.parse(await fs.readFile(path.join(SCHEMAS, 'plan-output.schema.json'), 'utf8')) as object);
      expect(valid(doc), JSON.stringify(valid.errors)).to.equal(true);
      // neither the secret's value nor the variable it comes from in the plan or the kept spec
      for (const text of [p.stdout, j.stdout, kept]) expect(text).not.to.include('sekret-value-1').and.not.to.include('PLAN_DIFF_TOKEN');
    } finally {
      delete process.env.PLAN_DIFF_TOKEN;
      await sb.destroy();
    }
  });
});
