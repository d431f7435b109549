'use strict';
// Moved to test/support/tls-helpers.js; this re-export keeps `require('./tls-helpers')` working.
module.exports = require('./support/tls-helpers');
