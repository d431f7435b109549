#!/usr/bin/env node
'use strict';
// npm test: every test/**/*.test.js with Node's test runner, several files at once, the longest
// first. Most of the suite's time is spent waiting (a booted guest, timeouts and drains that are
// the point of a test), so files run side by side; `node --test` would start them in name order,
// and a long file started last runs alone at the end, so the ones in SLOWEST start first.
//
//   npm test                            the whole suite
//   npm test -- test/a.test.js ...      those files only
//   npm test -- test/net test/x.test.js the files in those folders, and that file
//   npm run test:system                 test/system/ only (a booted guest, network namespaces, the .deb)
//   SVR_TEST_CONCURRENCY=1 npm test     one file at a time
//   SVR_TEST_TMPDIR=DIR npm test        scratch files in DIR (default: below)

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { run } = require('node:test');
const reporters = require('node:test/reporters');

const REPO = path.join(__dirname, '..');
const CONCURRENCY = Number(process.env.SVR_TEST_CONCURRENCY) || 5;

// Longest first (wall time of each file alone). A file not named here runs after these, in name
// order; a name here that no longer exists is left out.
const SLOWEST = [
  'test/system/service.test.js',
  'test/process/limits-reload-transfer.test.js',
  'test/pipeline/scripting/svrjs-compat.test.js',
  'test/net/limits-silent-connections.test.js',
  'test/system/lb-namespaces.test.js',
  'test/process/limits-watchdog.test.js',
  'test/system/deb.test.js',
  'test/system/wordpress.test.js', // 5-15 s; on a fresh machine its apt-get installs come first
  'test/net/limits-h1-send-timeout.test.js', // ~20 s
  'test/pipeline/proxy/gunicorn.test.js', // 1 s; on a fresh machine apt-get installs gunicorn first
  'test/pipeline/symlink-race.test.js',
  'test/net/limits-pipelining.test.js',
  'test/process/limits-kill-all.test.js',
  'test/pipeline/static/limits-listing.test.js',
  'test/system/install.test.js',
  'test/process/rebalance.test.js',
  'test/process/limits-crash-recycle.test.js',
  'test/pipeline/scripting/limits-script-timeout.test.js',
  'test/process/supervisor.test.js',
  'test/net/tls-reload.test.js',
  'test/net/https.test.js',
  'test/process/control.test.js',
  'test/pipeline/scripting/mods.test.js',
  'test/pipeline/proxy/proxy.test.js',
  'test/pipeline/gateway-safety.test.js',
  'test/pipeline/cgi.test.js',
  'test/project/pages.test.js',
  'test/pipeline/scripting/server-side-script.test.js',
  'test/pipeline/static/file-cache.test.js',
  'test/net/certificate.test.js',
  'test/pipeline/scripting/script-errors.test.js',
  'test/pipeline/static/static-process.test.js',
  'test/process/log-files.test.js',
  'test/pipeline/static/limits-compression.test.js',
];

function testFiles(dir) {
  return fs.readdirSync(path.join(REPO, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(file);
    return entry.name.endsWith('.test.js') ? [file] : [];
  });
}

// The files under each folder named, longest first; a file named is run as it is.
function inOrder(dirs) {
  const all = dirs.flatMap(testFiles).sort();
  const first = SLOWEST.filter((file) => all.includes(file));
  return [...first, ...all.filter((file) => !first.includes(file))];
}

// What runs that were killed left there (it is memory): a run takes minutes, not hours.
function removeStale(dir) {
  const cutoff = Date.now() - 3 * 60 * 60 * 1000;
  for (const name of fs.readdirSync(dir)) {
    const entry = path.join(dir, name);
    try {
      if (fs.lstatSync(entry).mtimeMs < cutoff) fs.rmSync(entry, { recursive: true, force: true });
    } catch { /* another user's, or gone meanwhile */ }
  }
}

// Scratch files on tmpfs (Debian 13's /tmp is one). The suite creates and removes ~22,000 files; on
// an ext4 without a journal (the root of the machines this project is built on) every new inode is
// looked for past each one deleted in the last seconds, which cost ~12 s of CPU a run. Test files
// reach this through os.tmpdir(), as do the servers they start.
function scratchDirectory() {
  if (process.env.SVR_TEST_TMPDIR) return process.env.SVR_TEST_TMPDIR;
  const TMPFS_MAGIC = 0x01021994;
  const onTmpfs = (dir) => { try { return fs.statfsSync(dir).type === TMPFS_MAGIC; } catch { return false; } };
  if (onTmpfs(os.tmpdir()) || !onTmpfs('/dev/shm')) return os.tmpdir();
  const dir = '/dev/shm/svr-test';
  try {
    fs.mkdirSync(dir, { recursive: true });
    // Like /tmp: the tests that run as another user write here too.
    if ((fs.statSync(dir).mode & 0o1777) !== 0o1777) fs.chmodSync(dir, 0o1777);
    removeStale(dir);
    return dir;
  } catch {
    return os.tmpdir(); // someone else's /dev/shm/svr-test: the usual place, then
  }
}
process.env.TMPDIR = scratchDirectory();

// The RSA keys of the tests' certificates are made once per run and shared by the test files
// (test/support/test-keys.js).
const keysDir = fs.mkdtempSync(path.join(process.env.TMPDIR, 'svr-test-keys-'));
process.env.SVR_TEST_KEYS_DIR = keysDir;
process.on('exit', () => fs.rmSync(keysDir, { recursive: true, force: true }));

// Node reads NODE_EXTRA_CA_CERTS when each process starts: with a system bundle in it, starting Node
// took 50 ms of CPU here instead of 17, for each of the ~470 Node processes of a run. The suite
// trusts only the certificates it makes; test/system/deb.test.js gives the variable back to the one step
// that may reach the npm registry.
if (process.env.NODE_EXTRA_CA_CERTS) {
  process.env.SVR_TEST_NODE_EXTRA_CA_CERTS = process.env.NODE_EXTRA_CA_CERTS;
  delete process.env.NODE_EXTRA_CA_CERTS;
}

function isDirectory(name) {
  try { return fs.statSync(path.resolve(REPO, name)).isDirectory(); } catch { return false; }
}

function chosenFiles(args) {
  if (args.length === 0) return inOrder(['test']);
  const dirs = args.filter(isDirectory).map((dir) => path.relative(REPO, path.resolve(REPO, dir)).split(path.sep).join('/'));
  return [...inOrder(dirs), ...args.filter((arg) => !isDirectory(arg))];
}

const files = chosenFiles(process.argv.slice(2)).map((file) => path.resolve(REPO, file));
const reporter = process.stdout.isTTY ? reporters.spec : reporters.tap;
const stream = run({ files, concurrency: CONCURRENCY });
stream.on('test:fail', () => { process.exitCode = 1; });
stream.compose(reporter).pipe(process.stdout);
