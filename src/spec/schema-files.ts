/**
 * Where the spec schema and its kept validator come from: files under schemas/, two levels above
 * this file both in src/spec and in dist/spec. The single-file build (scripts/build-cli.sh)
 * puts src/bundle/schema-files.ts in this module's place, which carries both inside the bundle.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

export const SCHEMA_PATH = path.resolve(__dirname, '..', '..', 'schemas', 'attempt.schema.json');
export const VALIDATOR_PATH = path.resolve(path.dirname(SCHEMA_PATH), 'attempt.validator.cjs');

export const CONFIG_SCHEMA_PATH = path.resolve(path.dirname(SCHEMA_PATH), 'config.schema.json');
export const CONFIG_VALIDATOR_PATH = path.resolve(path.dirname(SCHEMA_PATH), 'config.validator.cjs');

/** The schema of berth.yaml (src/cli/config.ts). */
export function configSchemaText(): string {
  return readFileSync(CONFIG_SCHEMA_PATH, 'utf8');
}

export function schemaText(): string {
  return readFileSync(SCHEMA_PATH, 'utf8');
}

/** The kept validator module (`schemas/attempt.validator.cjs`); throws when it cannot be loaded. */
export function keptValidatorModule(): unknown {
  return require(VALIDATOR_PATH);
}

/** The kept validator of berth.yaml (`schemas/config.validator.cjs`); throws when it cannot be loaded. */
export function keptConfigValidatorModule(): unknown {
  return require(CONFIG_VALIDATOR_PATH);
}
