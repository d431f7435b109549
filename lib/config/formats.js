'use strict';
// The schema's own string formats ("format": "svr-regex" / "svr-listen"), for the validator that
// scripts/config-validator.js generates (lib/config/validate-schema.js requires this file).

const { compileRegexString } = require('./regex-string');
const { parseListenAddress } = require('./listen-address');

// Why "/pattern/flags" does not compile, or null when it does.
function regexReason(text) {
  try {
    compileRegexString(text);
    return null;
  } catch (error) {
    return error.message;
  }
}

module.exports = {
  'svr-regex': (text) => regexReason(text) === null,
  'svr-listen': (value) => !parseListenAddress(value).error,
  regexReason,
};
