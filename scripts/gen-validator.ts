/** Writes schemas/attempt.validator.cjs and schemas/config.validator.cjs: the compiled validators of schemas/attempt.schema.json and config.schema.json. */
import { writeFileSync } from 'node:fs';
import { CONFIG_VALIDATOR_PATH, configValidatorModuleSource, VALIDATOR_PATH, validatorModuleSource } from '../src/spec/schema';

writeFileSync(VALIDATOR_PATH, validatorModuleSource());
console.log(`wrote ${VALIDATOR_PATH}`);
writeFileSync(CONFIG_VALIDATOR_PATH, configValidatorModuleSource());
console.log(`wrote ${CONFIG_VALIDATOR_PATH}`);
