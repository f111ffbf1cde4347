/**
 * src/spec/schema-files.ts for the single-file build: the schema's text and its kept validator
 * are inside the bundle (esbuild's text loader and a static require), so the bundle runs with
 * no schemas/ folder beside it.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
// @ts-expect-error: a text import, resolved by esbuild's loader (never by tsc's build)
import text from '../../schemas/attempt.schema.json?text';

// @ts-expect-error: a text import, resolved by esbuild's loader (never by tsc's build)
import configText from '../../schemas/config.schema.json?text';

export const CONFIG_SCHEMA_PATH = '(bundled) schemas/config.schema.json';
export const CONFIG_VALIDATOR_PATH = '(bundled) schemas/config.validator.cjs';

export function configSchemaText(): string {
  return configText as string;
}

export const SCHEMA_PATH = '(bundled) schemas/attempt.schema.json';
export const VALIDATOR_PATH = '(bundled) schemas/attempt.validator.cjs';

export function schemaText(): string {
  return text as string;
}

export function keptValidatorModule(): unknown {
  return require('../../schemas/attempt.validator.cjs');
}

export function keptConfigValidatorModule(): unknown {
  return require('../../schemas/config.validator.cjs');
}
