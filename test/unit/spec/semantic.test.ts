/** Semantic checks that JSON Schema cannot express, on already schema-valid documents. */
import { expect } from 'chai';
import type { RawAttempt, RawSpec } from '../../../src/spec/raw-types';
import { cleanPath, semanticIssues } from '../../../src/spec/semantic';
import { formatPath } from '../../../src/spec/field-path';

function check(spec: Partial<RawSpec>): string[] {
  const d: RawAttempt = { apiVersion: 'berth.dev/v1', kind: 'Attempt', metadata: { name: 'x' }, spec: { image: 'i', ...spec } };
  return semanticIssues(d).map((i) => `${formatPath(i.segs)} [${i.code}] ${i.message}`);
}

describe('spec/semantic', () => {
  it('accepts a spec that uses everything correctly', () => {
    expect(
      check({
        env: { A: 'a', KEY: { secretRef: 'k' } },
        secrets: [
          { name: 'k', fromEnv: 'K' },
          { name: 'f', fromFile: './f' },
        ],
        network: { mode: 'isolated', egress: ['a.example.com:443'] },
        volumes: [
          { name: 'c', mountPath: '/cache' },
          { name: 'd', mountPath: '/workspace/data' },
        ],
        resources: { memory: '6Mi' },
        workingDir: '/work',
      }),
    ).to.deep.equal([]);
  });

  it('allows egress only with network.mode isolated', () => {
    expect(check({ network: { egress: ['a.b:1'] } })).to.deep.equal(['spec.network.egress [egress-mode] egress needs network.mode: isolated (mode is none)']);
    expect(check({ network: { mode: 'bridge', egress: ['a.b:1'] } })).to.have.length(1);
    expect(check({ network: { mode: 'none', egress: [] } })).to.deep.equal([]);
  });

  it('requires env secretRefs to name declared secrets, and secret names to be unique', () => {
    expect(
      check({
        env: { A: { secretRef: 'nope' } },
        secrets: [
          { name: 'k', fromEnv: 'K' },
          { name: 'k', fromEnv: 'J' },
        ],
      }),
    ).to.deep.equal([
      'spec.secrets[1].name [secret-ref] duplicate secret name "k" (also spec.secrets[0])',
      'spec.env.A.secretRef [secret-ref] secret "nope" is not declared in spec.secrets; declared: k',
    ]);
  });

  it('keeps volumes off reserved paths, the working dir and each other', () => {
    expect(
      check({
        workingDir: '/w/',
        volumes: [
          { name: 'a', mountPath: '/results/' },
          { name: 'b', mountPath: '/run/secrets' },
          { name: 'c', mountPath: '/w' },
          { name: 'd', mountPath: '/' },
          { name: 'e', mountPath: '/x/../results' },
          { name: 'f', mountPath: '//data' },
          { name: 'f', mountPath: '/data' },
          { name: 'g', mountPath: '/resultsx' },
        ],
      }),
    ).to.deep.equal([
      'spec.volumes[0].mountPath [schema] must not be /results or below it (berth mounts it)',
      'spec.volumes[1].mountPath [schema] must not be /run/secrets or below it (berth mounts it)',
      'spec.volumes[2].mountPath [schema] must not be the workingDir /w (the fixture is copied there)',
      'spec.volumes[3].mountPath [schema] must not be /',
      'spec.volumes[4].mountPath [schema] must not contain ".." segments',
      'spec.volumes[6].name [schema] duplicate volume name "f" (also spec.volumes[5])',
      'spec.volumes[6].mountPath [schema] mount path /data is also used by spec.volumes[5]',
    ]);
  });

  it('keeps the working dir off reserved paths', () => {
    expect(check({ workingDir: '/run/secrets/x' })).to.deep.equal(['spec.workingDir [schema] must not be /run/secrets or below it']);
    expect(check({ workingDir: '/a/../b' })).to.deep.equal(['spec.workingDir [schema] must not contain ".." segments']);
  });

  it('checks the memory quantity range', () => {
    expect(check({ resources: { memory: '3Mi' } })).to.deep.equal(['spec.resources.memory [quantity] must be at least 6Mi (got "3Mi" = 3145728 bytes)']);
    expect(check({ resources: { memory: '2Pi' } })).to.deep.equal(['spec.resources.memory [quantity] must be at most 1Pi (got "2Pi")']);
  });

  it('checks spec.workspace.maxBytes as a size (no memory minimum)', () => {
    expect(check({ workspace: { maxBytes: '1k' } })).to.deep.equal([]);
    expect(check({ workspace: { maxBytes: '2Pi' } })).to.deep.equal(['spec.workspace.maxBytes [quantity] must be at most 1Pi (got "2Pi")']);
  });

  it('cleans container paths', () => {
    expect(['/a/', '//a//b/', '/', '/a/./b'].map(cleanPath)).to.deep.equal(['/a', '/a/b', '/', '/a/b']);
  });
});
