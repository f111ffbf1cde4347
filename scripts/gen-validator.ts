/** Writes schemas/attempt.validator.cjs: the compiled validator of schemas/attempt.schema.json. */
import { writeFileSync } from 'node:fs';
import { VALIDATOR_PATH, validatorModuleSource } from '../src/spec/schema';

writeFileSync(VALIDATOR_PATH, validatorModuleSource());
console.log(`wrote ${VALIDATOR_PATH}`);
