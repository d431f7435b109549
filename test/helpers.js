'use strict';
// Moved to test/support/helpers.js; this re-export keeps `require('./helpers')` working.
module.exports = require('./support/helpers');
