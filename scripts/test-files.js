#!/usr/bin/env node
'use strict';
// The test files `npm test` runs, for `node --test`: every test/**/*.test.js, the longest first.
// node --test runs several files at once (--test-concurrency) and starts them in the order given;
// a long file started last would run alone at the end, so the ones that take longest (a booted
// guest, a browser, timeouts that are the point) start first. A file missing from SLOWEST runs in
// name order after them; a name in SLOWEST that no longer exists is left out.

const fs = require('node:fs');
const path = require('node:path');

const SLOWEST = [
  'test/service.test.js',
  'test/svrjs-compat.test.js',
  'test/limits-reload-transfer.test.js',
  'test/pages.test.js',
  'test/limits-silent-connections.test.js',
  'test/symlink-race.test.js',
  'test/lb-namespaces.test.js',
  'test/deb.test.js',
  'test/https.test.js',
  'test/tls-reload.test.js',
  'test/limits-watchdog.test.js',
  'test/limits-pipelining.test.js',
  'test/limits-crash-recycle.test.js',
  'test/limits-script-timeout.test.js',
  'test/supervisor.test.js',
  'test/limits-listing.test.js',
  'test/install.test.js',
];

function testFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(full);
    return entry.name.endsWith('.test.js') ? [full] : [];
  });
}

const all = testFiles('test').sort();
const first = SLOWEST.filter((file) => all.includes(file));
process.stdout.write([...first, ...all.filter((file) => !first.includes(file))].join('\n') + '\n');
