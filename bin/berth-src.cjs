#!/usr/bin/env node
'use strict';
// berth from the TypeScript sources, without a build (tests and development): node bin/berth-src.cjs ...
require('./berth').checkNode(require('path').resolve(__dirname, '..'));
require('tsx/cjs');
require('../src/cli/index.ts').main(process.argv);
