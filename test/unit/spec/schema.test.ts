/** The JSON Schema file itself: strict 2020-12, closed objects, described fields. */
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020';
import { expect } from 'chai';
import {
  attemptSchema,
  attemptValidator,
  CONFIG_SCHEMA_PATH,
  CONFIG_VALIDATOR_PATH,
  configValidatorModuleSource,
  configValidatorSource,
  validateConfig,
  VALIDATOR_PATH,
  validatorModuleSource,
  validatorSource,
} from '../../../src/spec/schema';

type Json = Record<string, unknown>;

describe('spec/schema file', () => {
  const schema = attemptSchema();
  const defs = schema.$defs as Record<string, Json>;

  const resolve = (s: Json): Json => {
    const ref = s.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/$defs/')) return { ...(defs[ref.slice('#/$defs/'.length)] ?? {}), ...s };
    return s;
  };

  /** Every schema object reachable from the root, with a readable location. */
  const all = (): [string, Json][] => {
    const out: [string, Json][] = [];
    const walk = (s: unknown, at: string): void => {
      if (typeof s !== 'object' || s === null) return;
      if (Array.isArray(s)) return s.forEach((x, i) => walk(x, `${at}/${i}`));
      const o = s as Json;
      out.push([at, o]);
      for (const [k, v] of Object.entries(o)) if (k !== 'default' && k !== 'const' && k !== 'enum') walk(v, `${at}/${k}`);
    };
    walk(schema, '#');
    return out;
  };

  it('is draft 2020-12 with an $id and a title, and compiles in strict mode', () => {
    expect(schema.$schema).to.equal('https://json-schema.org/draft/2020-12/schema');
    expect(schema.$id).to.be.a('string');
    expect(schema.title).to.be.a('string');
    expect(() => attemptValidator()).not.to.throw();
  });

  // `if`/`then`/`else` only pick a shape (the spec's by kind at the top; spec.image required without spec.build): they add no fields.
  const selector = (at: string) => /\/(if|then|else)(\/|$)/.test(at);

  it('closes every object: additionalProperties is false wherever properties are listed', () => {
    for (const [at, s] of all()) {
      if (selector(at)) continue;
      if (s.properties !== undefined) expect(s.additionalProperties, at).to.equal(false);
    }
  });

  it('describes every field', () => {
    for (const [at, s] of all()) {
      if (selector(at)) continue;
      if (typeof s.properties !== 'object' || s.properties === null) continue;
      for (const [name, field] of Object.entries(s.properties as Record<string, Json>)) {
        expect(resolve(field).description, `${at}/properties/${name}`).to.be.a('string').and.not.equal('');
      }
    }
  });

  it("accepts the contract's example spec", () => {
    const v = attemptValidator();
    const ok = v({
      apiVersion: 'berth.dev/v1',
      kind: 'Attempt',
      metadata: { name: 'swe-task-42-try-1', labels: { suite: 'demo', model: 'm1' } },
      spec: {
        image: 'berth/busybox:local',
        command: ['sh', '-c', 'cp /workspace/input.txt /results/output.txt'],
        workingDir: '/workspace',
        env: { TASK_ID: '42' },
        secrets: [
          { name: 'api-key', fromEnv: 'OPENAI_API_KEY' },
          { name: 'token', fromFile: './secrets/token' },
        ],
        fixture: './fixtures/task-42',
        results: 'task-42',
        network: { mode: 'none', egress: ['api.example.com:443'] },
        volumes: [{ name: 'cache', mountPath: '/cache' }],
        resources: { cpus: 1, memory: '1Gi', pids: 512 },
        deadlineSeconds: 1800,
        retries: 0,
        ttlSecondsAfterFinished: 3600,
      },
    });
    expect(v.errors ?? []).to.deep.equal([]);
    expect(ok).to.equal(true);
  });

  it('checks egress hosts and ports', () => {
    const v = attemptValidator();
    const withEgress = (egress: string[]): boolean =>
      v({ apiVersion: 'berth.dev/v1', kind: 'Attempt', metadata: { name: 'x' }, spec: { image: 'i', network: { mode: 'isolated', egress } } });
    for (const good of ['a.com:1', '*.pypi.org:443', '10.0.0.1:65535', 'localhost:8080', 'x-y.example.co.uk:443']) {
      expect(withEgress([good]), good).to.equal(true);
    }
    for (const bad of ['a.com', 'a.com:0', 'a.com:65536', '999.1.1.1:80', '*.:1', 'http://a.com:80', 'a..b:1', '-a.com:1', '*a.com:1', 'a.com:80/x']) {
      expect(withEgress([bad]), bad).to.equal(false);
    }
  });

  it('checks label keys and values like Kubernetes', () => {
    const v = attemptValidator();
    const withLabels = (labels: Record<string, unknown>): boolean =>
      v({ apiVersion: 'berth.dev/v1', kind: 'Attempt', metadata: { name: 'x', labels }, spec: { image: 'i' } });
    expect(withLabels({ a: '', 'example.com/a_b.c': 'v-1', A9: 'x'.repeat(63) })).to.equal(true);
    for (const bad of [{ '/a': 'x' }, { 'a/': 'x' }, { 'A.com/x': 'y' }, { ['k'.repeat(64)]: 'x' }, { a: 'x'.repeat(64) }, { a: '-x' }, { a: 1 }]) {
      expect(withLabels(bad), JSON.stringify(bad)).to.equal(false);
    }
  });
});

describe('spec/schema kept validator', () => {
  it('schemas/attempt.validator.cjs is the compiled form of the schema as it is now (npm run gen:validator)', () => {
    const kept = readFileSync(VALIDATOR_PATH, 'utf8');
    expect(kept === validatorModuleSource(), 'schemas/attempt.validator.cjs is stale: run `npm run gen:validator`').to.equal(true);
  });

  it('is the validator the loader uses, and it judges as a freshly compiled one does', () => {
    const validate = attemptValidator();
    expect(validatorSource).to.equal('kept');
    const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
    ajv.addKeyword({ keyword: 'patternErrorMessage', schemaType: 'string' });
    const fresh = ajv.compile(attemptSchema());
    const docs: unknown[] = [
      { apiVersion: 'berth.dev/v1', kind: 'Attempt', metadata: { name: 'a' }, spec: { image: 'x', command: ['true'] } },
      { apiVersion: 'berth.dev/v1', kind: 'Attempt', metadata: { name: 'A_' }, spec: { image: 3, extra: true } },
      { kind: 'Nope' },
    ];
    for (const d of docs) {
      expect(validate(d)).to.equal(fresh(d));
      expect(validate.errors ?? null).to.deep.equal(fresh.errors ?? null);
    }
  });
});

describe('spec/schema kept validator of berth.yaml', () => {
  it('schemas/config.validator.cjs is the compiled form of config.schema.json as it is now (npm run gen:validator)', () => {
    const kept = readFileSync(CONFIG_VALIDATOR_PATH, 'utf8');
    expect(kept === configValidatorModuleSource(), 'schemas/config.validator.cjs is stale: run `npm run gen:validator`').to.equal(true);
  });

  it('is the validator berth.yaml is checked with, and it judges as a freshly compiled one does', () => {
    const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true, allowUnionTypes: true });
    ajv.addKeyword({ keyword: 'patternErrorMessage', schemaType: 'string' });
    const fresh = ajv.compile(JSON.parse(readFileSync(CONFIG_SCHEMA_PATH, 'utf8')) as Record<string, unknown>);
    const docs: unknown[] = [
      { specs: 'specs', 'log-level': 'warn', 'engine-timeout': 30 },
      { instance: 'Not_Valid', 'log-level': 'loud', nope: 1 },
      { contexts: { ci: { state: '' } } },
      [],
    ];
    for (const d of docs) {
      const got = validateConfig(d);
      expect(got.valid, JSON.stringify(d)).to.equal(fresh(d));
      expect(got.errors).to.deep.equal(fresh.errors ?? []);
    }
    expect(configValidatorSource).to.equal('kept');
  });
});
