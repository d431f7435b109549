#!/usr/bin/env node
'use strict';
// npm test: every test/**/*.test.js with Node's test runner, several files at once, the longest
// first. Most of the suite's time is spent waiting (a booted guest, timeouts and drains that are
// the point of a test), so files run side by side; `node --test` would start them in name order,
// and a long file started last runs alone at the end, so the ones in SLOWEST start first.
//
//   npm test                            the whole suite
//   npm test -- test/a.test.js ...      those files only
//   SVR_TEST_CONCURRENCY=1 npm test     one file at a time

const fs = require('node:fs');
const path = require('node:path');
const { run } = require('node:test');
const reporters = require('node:test/reporters');

const REPO = path.join(__dirname, '..');
const CONCURRENCY = Number(process.env.SVR_TEST_CONCURRENCY) || 5;

// Longest first (wall time of each file alone). A file not named here runs after these, in name
// order; a name here that no longer exists is left out.
const SLOWEST = [
  'test/service.test.js',
  'test/limits-reload-transfer.test.js',
  'test/svrjs-compat.test.js',
  'test/limits-silent-connections.test.js',
  'test/lb-namespaces.test.js',
  'test/limits-watchdog.test.js',
  'test/deb.test.js',
  'test/symlink-race.test.js',
  'test/limits-pipelining.test.js',
  'test/limits-kill-all.test.js',
  'test/limits-listing.test.js',
  'test/install.test.js',
  'test/rebalance.test.js',
  'test/limits-crash-recycle.test.js',
  'test/limits-script-timeout.test.js',
  'test/supervisor.test.js',
  'test/tls-reload.test.js',
  'test/https.test.js',
  'test/control.test.js',
  'test/mods.test.js',
  'test/proxy.test.js',
  'test/pages.test.js',
  'test/server-side-script.test.js',
  'test/file-cache.test.js',
  'test/certificate.test.js',
  'test/script-errors.test.js',
  'test/static-process.test.js',
  'test/log-files.test.js',
  'test/limits-compression.test.js',
];

function testFiles(dir) {
  return fs.readdirSync(path.join(REPO, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(file);
    return entry.name.endsWith('.test.js') ? [file] : [];
  });
}

function inOrder() {
  const all = testFiles('test').sort();
  const first = SLOWEST.filter((file) => all.includes(file));
  return [...first, ...all.filter((file) => !first.includes(file))];
}

const files = (process.argv.length > 2 ? process.argv.slice(2) : inOrder()).map((file) => path.resolve(REPO, file));
const reporter = process.stdout.isTTY ? reporters.spec : reporters.tap;
const stream = run({ files, concurrency: CONCURRENCY });
stream.on('test:fail', () => { process.exitCode = 1; });
stream.compose(reporter).pipe(process.stdout);
