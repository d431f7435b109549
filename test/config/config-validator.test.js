'use strict';

// The config's validator is generated from config/svr-config.schema.json by
// scripts/config-validator.js (ajv's standalone code, so a start never compiles the schema). This
// test keeps the committed file in step with the schema.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { generate, OUT_FILE } = require('../../scripts/config-validator');

test('lib/config/validate-schema.js is the validator generated from the schema', () => {
  assert.ok(fs.readFileSync(OUT_FILE, 'utf8') === generate(),
    'lib/config/validate-schema.js is out of date with config/svr-config.schema.json: run `npm run config:validator`');
});
