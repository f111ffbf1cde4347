/** plan's field-level diff of a replace (spec/spec-diff.ts, cli/commands/plan.ts withSpecDiffs). */
import { expect } from 'chai';
import { withSpecDiffs } from '../../../src/cli/commands/plan';
import type { Plan } from '../../../src/plan/types';
import { changeText, diffForm, diffSpecs } from '../../../src/spec/spec-diff';
import { spec, status } from '../../support/builders';

describe('spec diff: what a new spec changes, field by field', () => {
  const before = spec('a', {
    command: ['sh', '-c', 'x2'],
    env: { KEEP: '1', GONE: '2' },
    secrets: [
      { name: 'api-key', fromEnv: 'OPENAI_API_KEY' },
      { name: 'old', fromEnv: 'OLD_VAR' },
    ],
  }).spec;
  const after = spec('a', {
    command: ['sh', '-c', 'x3'],
    env: { KEEP: '1', NEW: '3' },
    secrets: [
      { name: 'api-key', fromEnv: 'ANOTHER_VAR' },
      { name: 'token', fromEnv: 'TOKEN_VAR' },
    ],
  }).spec;

  it('each changed field once, in path order; secrets by name only, never where they come from', () => {
    const changes = diffSpecs(diffForm(before), diffForm(after));
    expect(changes.map(changeText)).to.deep.equal([
      '~ spec.command: ["sh","-c","x2"] -> ["sh","-c","x3"]',
      '- spec.env.GONE: "2"',
      '+ spec.env.NEW: "3"',
      '~ spec.secrets[api-key]: its source changed',
      '- spec.secrets[old]',
      '+ spec.secrets[token]',
    ]);
    const all = JSON.stringify([diffForm(before), diffForm(after), changes]);
    for (const v of ['OPENAI_API_KEY', 'ANOTHER_VAR', 'TOKEN_VAR', 'OLD_VAR']) expect(all).not.to.include(v);
  });

  it('fields outside the hash (labels, retries) are no change; a long value is cut', () => {
    expect(diffSpecs(diffForm(before), diffForm({ ...before, labels: { x: 'y' }, retries: 3 }))).to.deep.equal([]);
    const long = diffSpecs(diffForm(before), diffForm({ ...before, command: ['sh', '-c', 'y'.repeat(500)] }));
    expect(changeText(long[0] as never).length).to.be.lessThan(300);
  });

  it('plan: a replace carries its changes; a run whose spec was not kept says it cannot tell', () => {
    const next = spec('a', { command: ['sh', '-c', 'x3'] }, 'h-new');
    const mk = (): Plan => ({
      at: 0,
      unchanged: new Map(),
      actions: [
        {
          attempt: 'a',
          kind: 'replace',
          summary: 'spec hash changed',
          ops: [{ type: 'forget', resource: 'x', cause: 'c' }],
          status: status('a', { specHash: 'h-a' }),
        },
      ],
    });
    const load = { specs: [next], errors: [], protectedNames: new Set<string>(), unreadableFiles: new Set<string>(), unreadableFolders: new Set<string>() };
    const p = mk();
    withSpecDiffs(p, load, { get: () => ({ schemaVersion: 1, specHash: 'h-a', spec: diffForm(spec('a', { command: ['sh', '-c', 'x2'] }).spec) }) });
    expect(p.actions[0]?.specDiff).to.deep.equal({ changes: [{ path: 'spec.command', from: ['sh', '-c', 'x2'], to: ['sh', '-c', 'x3'] }] });
    const q = mk();
    withSpecDiffs(q, load, { get: () => undefined });
    expect(q.actions[0]?.specDiff)
      .to.have.property('unknown')
      .that.matches(/not kept/);
  });
});
