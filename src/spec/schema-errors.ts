/**
 * ajv errors → short human messages at a field path. Collapses what ajv reports per branch of a
 * `oneOf` into one message, points unknown fields at their key with a "did you mean", turns
 * `propertyNames` failures into errors on the key, and reports every problem with
 * spec.resources.memory as a `quantity` error with the quantity parser's explanation.
 */
import type { ErrorObject } from 'ajv/dist/2020';
import { didYouMean } from './did-you-mean';
import { describeType, describeValue, hasType, orList } from './describe';
import { formatPath, isRecord, parsePointer, valueAt, type Segment } from './field-path';
import type { Anchor } from './positions';
import { parseMemory } from './quantity';
import type { SpecErrorCode } from './types';
import { plural } from '../util/plural';

/** A schema problem, not yet placed in the source. */
export interface FieldIssue {
  segs: Segment[];
  anchor: Anchor;
  code: SpecErrorCode;
  message: string;
}

/** While translating: what an unknown field was probably meant to be, or that a field is missing. */
interface Translated extends FieldIssue {
  suggestion?: string;
  missing?: boolean;
}

const MEMORY_PATH = 'spec.resources.memory';
const YAML11_BOOLEANS = /^(y|yes|n|no|on|off|true|false)$/i;

type Schema = Record<string, unknown>;

export function schemaIssues(errors: readonly ErrorObject[], data: unknown): FieldIssue[] {
  const dropped = new Set<ErrorObject>();
  const extra: FieldIssue[] = [];

  for (const e of errors) {
    // `if`/`then` picks the spec's shape by kind (AttemptSet or Attempt); its own errors say nothing more.
    if (e.keyword === 'propertyNames' || e.keyword === 'if') dropped.add(e);
    if (e.keyword !== 'oneOf' || !Array.isArray(e.schema)) continue;
    const branches = e.schema as Schema[];
    const value = valueAt(data, parsePointer(e.instancePath, data));
    const match = branches.findIndex((b) => hasType(value, b.type));
    dropped.add(e);
    for (const other of errors) {
      if (other.instancePath !== e.instancePath || other === e) continue;
      const k = branches.indexOf(other.parentSchema as Schema);
      if (k >= 0 && k !== match) dropped.add(other);
    }
    if (match < 0) {
      const segs = parsePointer(e.instancePath, data);
      const expected = orList(branches.map(describeBranch));
      extra.push({
        segs,
        anchor: 'value',
        code: 'schema',
        message: `must be ${expected} (got ${describeValue(value)})${quoteHint(
          branches.map((b) => b.type),
          value,
        )}`,
      });
    }
  }

  // A value of the wrong type fails its bounds too (pids: 0.5 is below 1): say only the type.
  const wrongType = new Set(errors.filter((e) => e.keyword === 'type' && !dropped.has(e)).map((e) => e.instancePath));
  for (const e of errors) {
    if (e.keyword !== 'type' && wrongType.has(e.instancePath) && (e as { propertyName?: string }).propertyName === undefined) dropped.add(e);
  }

  const out: Translated[] = [...extra];
  const suggested = new Set<string>();
  for (const e of errors) {
    if (dropped.has(e)) continue;
    const issue = translate(e, data);
    if (!issue) continue;
    out.push(issue);
    if (issue.suggestion !== undefined) suggested.add(formatPath([...issue.segs.slice(0, -1), issue.suggestion]));
  }
  // "unknown field imagee (did you mean image?)" already says that image is missing.
  const kept = out.filter((i) => !(i.missing && suggested.has(formatPath(i.segs))));
  return dedupe(kept.map(({ suggestion: _s, missing: _m, ...i }) => (formatPath(i.segs) === MEMORY_PATH ? memoryIssue(i, data) : i)));
}

function translate(e: ErrorObject, data: unknown): Translated | undefined {
  const segs = parsePointer(e.instancePath, data);
  const p = e.params as Record<string, unknown>;
  const parent = (isRecord(e.parentSchema) ? e.parentSchema : {}) as Schema;
  const propertyName = (e as ErrorObject & { propertyName?: string }).propertyName;
  if (propertyName !== undefined) {
    // A key failed propertyNames: report it on the key itself.
    let why: string;
    if (e.keyword === 'pattern' && typeof parent.patternErrorMessage === 'string') why = parent.patternErrorMessage;
    else if (e.keyword === 'maxLength') why = `must be at most ${String(p.limit)} characters`;
    else if (e.keyword === 'minLength') why = 'must not be empty';
    else why = e.message ?? `fails ${e.keyword}`;
    return { segs: [...segs, propertyName], anchor: 'key', code: 'schema', message: `invalid key ${describeValue(propertyName)}: ${why}` };
  }
  const value = valueAt(data, segs);
  const got = ` (got ${describeValue(value)})`;
  const issue = (message: string, at: Segment[] = segs, anchor: Anchor = 'value'): FieldIssue => ({
    segs: at,
    anchor,
    code: 'schema',
    message,
  });

  switch (e.keyword) {
    case 'type':
      return issue(`must be ${describeType(p.type)}${got}${typeHint(p.type, value)}`);
    case 'const':
      return issue(`must be ${JSON.stringify(p.allowedValue)}${got}`);
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]).map(String);
      const dym = typeof value === 'string' ? didYouMean(value, allowed) : undefined;
      return issue(`must be one of ${allowed.join(', ')}${got}${dym ? ` (did you mean "${dym}"?)` : ''}`);
    }
    case 'required': {
      const missing = String(p.missingProperty);
      return { ...issue(`required field "${missing}" is missing`, [...segs, missing], 'key'), missing: true };
    }
    case 'additionalProperties': {
      const field = String(p.additionalProperty);
      const known = isRecord(parent.properties) ? Object.keys(parent.properties) : [];
      const dym = didYouMean(field, known);
      const hint = dym ? ` (did you mean "${dym}"?)` : known.length > 0 ? `; known fields: ${known.join(', ')}` : '';
      return { ...issue(`unknown field ${describeValue(field)}${hint}`, [...segs, field], 'key'), suggestion: dym };
    }
    case 'pattern': {
      const msg = typeof parent.patternErrorMessage === 'string' ? parent.patternErrorMessage : `must match ${String(p.pattern)}`;
      return issue(`${msg}${got}`);
    }
    case 'minLength':
      return issue(p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters${got}`);
    case 'maxLength':
      return issue(`must be at most ${String(p.limit)} characters (got ${typeof value === 'string' ? value.length : '?'})`);
    case 'minimum':
      return issue(`must be at least ${String(p.limit)}${got}`);
    case 'maximum':
      return issue(`must be at most ${String(p.limit)}${got}`);
    case 'exclusiveMinimum':
      return issue(`must be greater than ${String(p.limit)}${got}`);
    case 'exclusiveMaximum':
      return issue(`must be less than ${String(p.limit)}${got}`);
    case 'minItems':
      return issue(`must have at least ${plural(Number(p.limit), 'item')}`);
    case 'maxItems':
      return issue(`must have at most ${plural(Number(p.limit), 'item')} (got ${Array.isArray(value) ? value.length : '?'})`);
    case 'uniqueItems': {
      const i = Number(p.i);
      const j = Number(p.j);
      const later = Math.max(i, j);
      const arr = Array.isArray(value) ? value : [];
      return issue(`repeats ${describeValue(arr[later])} (same as item ${Math.min(i, j)})`, [...segs, later]);
    }
    case 'minProperties':
    case 'maxProperties':
      return propertiesCount(e.keyword, Number(p.limit), parent, value, issue);
    default:
      return issue(e.message ?? `fails ${e.keyword}`);
  }
}

/** Secrets are `{name, fromEnv}` or `{name, fromFile}`, which the schema says as "exactly 2 fields". */
function propertiesCount(keyword: string, limit: number, parent: Schema, value: unknown, issue: (m: string) => FieldIssue): FieldIssue | undefined {
  const props = isRecord(parent.properties) ? parent.properties : {};
  if ('fromEnv' in props && 'fromFile' in props && isRecord(value)) {
    const present = ['fromEnv', 'fromFile'].filter((k) => k in value);
    if (keyword === 'maxProperties' && present.length === 2) return issue('set exactly one of fromEnv or fromFile, not both');
    if (keyword === 'minProperties' && present.length === 0) return issue('set one of fromEnv or fromFile');
    return undefined; // another error (missing name, unknown field) already says what is wrong
  }
  return keyword === 'minProperties' ? issue(`must have at least ${plural(limit, 'field')}`) : issue(`must have at most ${plural(limit, 'field')}`);
}

function describeBranch(b: Schema): string {
  if (b.type === 'object' && Array.isArray(b.required) && b.required.length === 1) return `a mapping {${String(b.required[0])}: …}`;
  return describeType(b.type);
}

function typeHint(expected: unknown, value: unknown): string {
  return quoteHint([expected], value) || boolHint(expected, value);
}

function quoteHint(expected: readonly unknown[], value: unknown): string {
  if (expected.includes('string') && (typeof value === 'number' || typeof value === 'boolean')) {
    return `; quote it: "${String(value)}"`;
  }
  return '';
}

function boolHint(expected: unknown, value: unknown): string {
  if (expected === 'boolean' && typeof value === 'string' && YAML11_BOOLEANS.test(value)) {
    return `; YAML 1.2 reads ${value} as a string, write true or false`;
  }
  return '';
}

function memoryIssue(i: FieldIssue, data: unknown): FieldIssue {
  const value = valueAt(data, i.segs);
  if (typeof value === 'string') {
    const parsed = parseMemory(value);
    if (!parsed.ok) return { ...i, code: 'quantity', message: parsed.message };
  }
  if (typeof value !== 'string' && !hasType(value, 'integer')) {
    return { ...i, code: 'quantity', message: `must be a quantity such as 512Mi or a whole number of bytes (got ${describeValue(value)})` };
  }
  return { ...i, code: 'quantity' };
}

function dedupe(issues: FieldIssue[]): FieldIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const k = `${formatPath(i.segs)}\0${i.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
