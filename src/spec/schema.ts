/**
 * The JSON Schema validator: schemas/attempt.schema.json compiled once with ajv (draft 2020-12,
 * strict, all errors, verbose so error formatting can read the failing schema).
 * `patternErrorMessage` (an annotation VS Code understands) is declared so strict mode accepts it.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import type { RawAttempt } from './raw-types';

/** schemas/ sits two levels above this file both in src/spec and in dist/spec. */
export const SCHEMA_PATH = path.resolve(__dirname, '..', '..', 'schemas', 'attempt.schema.json');

let compiled: ValidateFunction<RawAttempt> | undefined;

export function attemptSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as Record<string, unknown>;
}

export function attemptValidator(): ValidateFunction<RawAttempt> {
  if (!compiled) {
    const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
    ajv.addKeyword({ keyword: 'patternErrorMessage', schemaType: 'string' });
    compiled = ajv.compile<RawAttempt>(attemptSchema());
  }
  return compiled;
}

/** Validates one document; returns the raw ajv errors (empty when valid). */
export function validateAttempt(data: unknown): { valid: boolean; errors: ErrorObject[] } {
  const validate = attemptValidator();
  const valid = validate(data);
  return { valid, errors: valid ? [] : [...(validate.errors ?? [])] };
}
