/**
 * Properties: loading never throws, whatever the text (every problem comes back as a SpecError
 * with a known code and a real position); and the spec hash does not depend on key order or on
 * defaults being written out.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { loadText, type FileOutcome } from '../../../src/spec/load-file';
import type { Roots } from '../../../src/spec/path-checks';
import type { SpecErrorCode } from '../../../src/spec/types';
import { cleanupTemp, tempDir } from './helpers';

const CODES: ReadonlySet<SpecErrorCode> = new Set<SpecErrorCode>([
  'io',
  'encoding',
  'too-large',
  'yaml-syntax',
  'yaml-duplicate-key',
  'yaml-alias-limit',
  'yaml-too-deep',
  'yaml-tag',
  'not-a-mapping',
  'schema',
  'duplicate-name',
  'path-escape',
  'missing-file',
  'fixture-link',
  'fixture-special',
  'egress-mode',
  'secret-ref',
  'quantity',
]);

describe('spec/loader properties', () => {
  let roots: Roots;
  let specFile: { abs: string; rel: string };
  before(() => {
    const root = tempDir();
    const specs = path.join(root, 'specs');
    mkdirSync(specs);
    roots = { specsRoot: specs, specsReal: specs, resultsRoot: path.join(root, 'results'), resultsReal: path.join(root, 'results') };
    specFile = { abs: path.join(specs, 'p.yaml'), rel: 'p.yaml' };
  });
  after(cleanupTemp);

  const load = (text: string): Promise<FileOutcome> => loadText(text, specFile, 'p.yaml', roots);

  const wellFormed = (text: string, o: FileOutcome): void => {
    const lines = text.split('\n').length;
    const errors = [...o.errors, ...o.docs.flatMap((d) => d.errors)];
    for (const e of errors) {
      expect(CODES.has(e.code), e.code).to.equal(true);
      expect(e.line, e.message).to.be.within(1, lines);
      expect(e.col, e.message).to.be.at.least(1);
      expect(e.message).to.be.a('string').and.not.equal('');
      expect(e.message).not.to.match(/internal error/);
    }
    for (const d of o.docs) if (d.loaded) expect(d.errors).to.deep.equal([]);
  };

  it('never throws on arbitrary strings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 200 }), async (text) => wellFormed(text, await load(text))),
      { numRuns: 300 },
    );
  });

  const yamlish = fc
    .array(
      fc.constantFrom(
        'a',
        'x',
        ':',
        ': ',
        ' ',
        '  ',
        '\n',
        '\n  ',
        '- ',
        '[',
        ']',
        '{',
        '}',
        ',',
        '&a ',
        '*a',
        '&b ',
        '*b',
        '!t ',
        '!!str ',
        '!!binary ',
        '<<: ',
        '"',
        "'",
        '#',
        '\n---\n',
        '\n...\n',
        '? ',
        '\t',
        '|',
        '>',
        '%YAML 1.1\n',
        '42',
        'yes',
        '~',
        'null',
        '.inf',
        '0x1F',
        'apiVersion: berth.dev/v1\n',
        'kind: Attempt\n',
        'metadata:\n',
        '  name: x\n',
        'spec:\n',
        '  image: i\n',
        '  env:\n',
        '    A: 1\n',
        '  volumes: [{name: v, mountPath: /v}]\n',
        '  resources: {memory: 1Gi}\n',
        '  network: {mode: isolated, egress: [a.b:1]}\n',
      ),
      { maxLength: 60 },
    )
    .map((parts) => parts.join(''));

  it('never throws on arbitrary YAML-ish text', async () => {
    await fc.assert(
      fc.asyncProperty(yamlish, async (text) => wellFormed(text, await load(text))),
      { numRuns: 500 },
    );
  });

  it('never throws on arbitrary JSON values written as YAML, alone or in a spec', async () => {
    const anywhere = fc.record({
      apiVersion: fc.oneof(fc.constant('berth.dev/v1'), fc.jsonValue()),
      kind: fc.oneof(fc.constant('Attempt'), fc.jsonValue()),
      metadata: fc.oneof(fc.record({ name: fc.oneof(fc.constant('x'), fc.jsonValue()), labels: fc.jsonValue() }, { requiredKeys: ['name'] }), fc.jsonValue()),
      spec: fc.oneof(
        fc.record(
          {
            image: fc.oneof(fc.constant('i'), fc.jsonValue()),
            command: fc.jsonValue(),
            env: fc.oneof(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue()),
            secrets: fc.jsonValue(),
            network: fc.oneof(fc.record({ mode: fc.jsonValue(), egress: fc.jsonValue() }), fc.jsonValue()),
            volumes: fc.jsonValue(),
            resources: fc.oneof(fc.record({ cpus: fc.jsonValue(), memory: fc.jsonValue(), pids: fc.jsonValue() }), fc.jsonValue()),
            workingDir: fc.jsonValue(),
            retries: fc.jsonValue(),
          },
          { requiredKeys: ['image'] },
        ),
        fc.jsonValue(),
      ),
    });
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), anywhere), async (value) => {
        const text = stringify(value);
        wellFormed(text, await load(text));
      }),
      { numRuns: 300 },
    );
  });

  describe('the spec hash', () => {
    const spec = fc.record(
      {
        command: fc.array(fc.string(), { minLength: 1, maxLength: 3 }),
        workingDir: fc.constantFrom('/workspace', '/w', '/a/b'),
        env: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,5}$/), fc.string(), { maxKeys: 4 }),
        network: fc.record({ mode: fc.constantFrom('none', 'bridge') }, { requiredKeys: [] }),
        resources: fc.record(
          { cpus: fc.constantFrom(0.5, 1, 2), memory: fc.constantFrom('64Mi', '1Gi', 8000000), pids: fc.integer({ min: 1, max: 1000 }) },
          { requiredKeys: [] },
        ),
        retries: fc.integer({ min: 0, max: 100 }),
        deadlineSeconds: fc.integer({ min: 1, max: 100000 }),
      },
      { requiredKeys: [] },
    );
    const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/);

    const hashOf = async (value: unknown): Promise<string> => {
      const o = await load(stringify(value));
      const loaded = o.docs[0]?.loaded;
      expect(loaded, JSON.stringify([o.errors, o.docs[0]?.errors])).to.not.equal(undefined);
      return loaded?.hash ?? '';
    };

    /** The same data with every mapping's keys in a shuffled order. */
    const shuffled = (v: unknown, seed: number): unknown => {
      if (Array.isArray(v)) return v.map((x, i) => shuffled(x, seed + i));
      if (typeof v !== 'object' || v === null) return v;
      const keys = Object.keys(v);
      const order = keys.map((k, i) => [k, ((i + 1) * 2654435761 + seed) % 1000] as const).sort((a, b) => a[1] - b[1]);
      return Object.fromEntries(order.map(([k]) => [k, shuffled((v as Record<string, unknown>)[k], seed * 31 + 7)]));
    };

    it('does not depend on key order', async () => {
      await fc.assert(
        fc.asyncProperty(name, spec, fc.nat(), async (n, s, seed) => {
          const value = { apiVersion: 'berth.dev/v1', kind: 'Attempt', metadata: { name: n }, spec: { image: 'berth/busybox:local', ...s } };
          expect(await hashOf(shuffled(value, seed))).to.equal(await hashOf(value));
        }),
        { numRuns: 100 },
      );
    });

    it('does not depend on defaults being written out', async () => {
      await fc.assert(
        fc.asyncProperty(name, spec, async (n, s) => {
          const implicit = { apiVersion: 'berth.dev/v1', kind: 'Attempt', metadata: { name: n }, spec: { image: 'berth/busybox:local', ...s } };
          const explicit = {
            apiVersion: 'berth.dev/v1',
            kind: 'Attempt',
            metadata: { name: n, labels: {} },
            spec: {
              image: 'berth/busybox:local',
              workingDir: '/workspace',
              env: {},
              secrets: [],
              results: n,
              volumes: [],
              retries: 0,
              ...s,
              network: { mode: 'none', egress: [], ...s.network },
              resources: { pids: 512, ...s.resources },
            },
          };
          expect(await hashOf(explicit)).to.equal(await hashOf(implicit));
        }),
        { numRuns: 100 },
      );
    });
  });
});
