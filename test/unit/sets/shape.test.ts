/**
 * Children made from their set's shape (src/spec/set-shape.ts) are exactly the children a full check
 * of each gives: the same specs, hashes, errors and protected names, for any template and values.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { shapes } from '../../../src/spec/check-set';
import { DNS_LABEL, LABEL_VALUE, OPAQUE_STRING } from '../../../src/spec/set-shape';
import { clearSpecFileCache } from '../../../src/spec/file-cache';
import type { LoadReport } from '../../../src/spec/loader';
import { cleanupTemp, REPO, sandbox } from '../spec/helpers';

interface SchemaNode {
  $ref?: string;
  oneOf?: SchemaNode[];
  items?: SchemaNode;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode;
  [k: string]: unknown;
}
const schema = JSON.parse(readFileSync(path.join(REPO, 'schemas', 'attempt.schema.json'), 'utf8')) as { $defs: Record<string, SchemaNode> };
const def = (n: string) => schema.$defs[n] as SchemaNode;
/** The constraints of a string node, as the shape mirrors them. */
const constraints = (n: SchemaNode) => ({
  type: n.type,
  maxLength: n.maxLength,
  pattern: n.pattern,
  minLength: n.minLength,
  keys: Object.keys(n)
    .filter((k) => !['description', 'patternErrorMessage'].includes(k))
    .sort(),
});

/** Loads the sandbox twice, children from shapes and every child checked in full. */
async function both(files: Record<string, string>): Promise<{ shaped: LoadReport; full: LoadReport }> {
  const box = sandbox(files);
  clearSpecFileCache();
  const shaped = await box.load();
  clearSpecFileCache();
  shapes.enabled = false;
  try {
    return { shaped, full: await box.load() };
  } finally {
    shapes.enabled = true;
    clearSpecFileCache();
  }
}

const comparable = (r: LoadReport) => ({
  specs: r.specs,
  errors: r.errors,
  protectedNames: [...r.protectedNames].sort(),
  sets: [...(r.sets ?? new Map())],
  unreadable: [...r.unreadableFiles],
});

function setYaml(axes: Record<string, string[]>, template: string, extra = ''): string {
  const matrix = Object.entries(axes)
    .map(([a, vs]) => `    ${a}: ${JSON.stringify(vs)}`)
    .join('\n');
  return `apiVersion: berth.dev/v1\nkind: AttemptSet\nmetadata:\n  name: s\n${extra}spec:\n  matrix:\n${matrix}\n  template:\n${template}`;
}

describe('sets: children made from the shape', () => {
  afterEach(() => {
    shapes.enabled = true;
    cleanupTemp();
  });

  it('mirrors the schema: command arguments and plain env values, names, label values', () => {
    const spec = def('spec').properties as Record<string, SchemaNode>;
    const arg = (spec.command as SchemaNode).items as SchemaNode;
    const plainEnv = (def('envValue').oneOf as SchemaNode[])[0] as SchemaNode;
    for (const n of [arg, plainEnv]) {
      expect(constraints(n)).to.deep.equal({
        type: 'string',
        maxLength: OPAQUE_STRING.maxLength,
        pattern: OPAQUE_STRING.pattern,
        minLength: undefined,
        keys: ['maxLength', 'pattern', 'type'],
      });
    }
    expect(constraints(def('dnsLabel'))).to.deep.include({ type: 'string', maxLength: DNS_LABEL.maxLength, pattern: DNS_LABEL.pattern, minLength: 1 });
    const labelValue = ((def('metadata').properties as Record<string, SchemaNode>).labels as SchemaNode).additionalProperties as SchemaNode;
    expect(labelValue.pattern).to.equal(LABEL_VALUE.source);
    expect(labelValue.maxLength).to.equal(63);
  });

  it('gives the same children as a full check of each: 10 x 10 with arguments, env and a fixed results folder', async () => {
    const axes = { a: Array.from({ length: 10 }, (_, i) => `v${i}`), b: Array.from({ length: 10 }, (_, i) => `w${i}`) };
    const template = `    image: berth/busybox:local\n    command: [sh, -c, 'echo \${{ matrix.a }} \${{ matrix.b }}', '\${{ matrix.b }}']\n    env: {A: '\${{ matrix.a }}', K: fixed}\n    network: {mode: isolated, egress: [example.com:443]}\n`;
    const { shaped, full } = await both({ 'set.yaml': setYaml(axes, template, '  labels: {team: x}\n') });
    expect(shaped.errors).to.deep.equal([]);
    expect(shaped.specs).to.have.length(100);
    expect(comparable(shaped)).to.deep.equal(comparable(full));
  });

  it('checks in full a child whose value the shape cannot vouch for: its errors are as they were', async () => {
    // A 1,024-character value makes an argument of 130 copies too long (invalid); "Up" is no label value (no axis label);
    // "x-y" gives a slugged name with a hash.
    const axes = { a: ['ok', 'x'.repeat(1024), 'Up', 'x-y'] };
    const template = `    image: berth/busybox:local\n    command: [echo, '${'${{ matrix.a }}'.repeat(130)}']\n`;
    const { shaped, full } = await both({ 'set.yaml': setYaml(axes, template) });
    expect(shaped.errors.map((e) => [e.code, e.path, e.attempt?.slice(0, 3)])).to.deep.equal([['schema', 'spec.template.command[1]', 's-x']]);
    expect(shaped.specs).to.have.length(3);
    expect(comparable(shaped)).to.deep.equal(comparable(full));
  });

  it('property: any template of arguments, env values, image and results, any values: the same load', async () => {
    const value = fc.oneof(
      fc.stringMatching(/^[a-z0-9]{1,6}$/),
      fc.stringMatching(/^[A-Za-z0-9._-]{0,8}$/),
      fc.string({ maxLength: 8 }),
      fc.constantFrom('a b', 'ä', '-x', 'x'.repeat(64), '', 'Z'),
    );
    const axisNames = fc.uniqueArray(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 3 });
    const arb = axisNames.chain((names) =>
      fc.record({
        axes: fc.tuple(...names.map((n) => fc.uniqueArray(value, { minLength: 1, maxLength: 3 }).map((vs) => [n, vs] as [string, string[]]))),
        args: fc.array(
          fc.oneof(
            fc.constant('plain'),
            fc.constantFrom(...names).map((n) => `--${n}=\${{ matrix.${n} }}`),
          ),
          { minLength: 1, maxLength: 3 },
        ),
        env: fc.option(fc.constantFrom(...names), { nil: undefined }),
        image: fc.boolean(),
        results: fc.constantFrom(undefined, 'shared', 'r-${{ matrix.' + (names[0] as string) + ' }}'),
      }),
    );
    await fc.assert(
      fc.asyncProperty(arb, async (t) => {
        const lines = [
          `    image: ${t.image ? `'img-\${{ matrix.${t.axes[0]?.[0] as string} }}'` : 'berth/busybox:local'}`,
          `    command: ${JSON.stringify(t.args)}`,
        ];
        if (t.env) lines.push(`    env: {V: '\${{ matrix.${t.env} }}'}`);
        if (t.results) lines.push(`    results: '${t.results}'`);
        const { shaped, full } = await both({ 'set.yaml': setYaml(Object.fromEntries(t.axes), lines.join('\n') + '\n') });
        cleanupTemp();
        expect(comparable(shaped)).to.deep.equal(comparable(full));
      }),
      { numRuns: 60 },
    );
  });
});
