'use strict';
// scripts/test.js (npm test): what it gives the test files it runs. Node's start-up without the
// CA bundle of NODE_EXTRA_CA_CERTS, scratch files on tmpfs when the machine has one.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..', '..');
const PROBE = path.join(__dirname, '..', 'fixtures', 'runner', 'environment-probe.js');
const TMPFS_MAGIC = 0x01021994;
const devShmIsTmpfs = (() => { try { return fs.statfsSync('/dev/shm').type === TMPFS_MAGIC; } catch { return false; } })();

// The environment the probe file saw when scripts/test.js ran it with `env`.
function probe(env) {
  // Without NODE_TEST_CONTEXT, which tells a process that it is a test file of an outer runner.
  const { NODE_TEST_CONTEXT, ...outer } = process.env;
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/test.js'), PROBE], {
    encoding: 'utf8', env: { ...outer, ...env }, timeout: 60000,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const line = /PROBE (\{.*\})/.exec(r.stdout);
  assert.ok(line, r.stdout);
  return JSON.parse(line[1]);
}

test('NODE_EXTRA_CA_CERTS is taken from the test files and kept aside as SVR_TEST_NODE_EXTRA_CA_CERTS', () => {
  const seen = probe({ NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' });
  assert.equal(seen.extraCaCerts, null);
  assert.equal(seen.keptCaCerts, '/etc/ssl/certs/ca-certificates.crt');
});

test('scratch files go to /dev/shm/svr-test when the temporary directory is on disk; what killed runs left there goes', { skip: !devShmIsTmpfs && 'no tmpfs at /dev/shm' }, () => {
  const SCRATCH = '/dev/shm/svr-test';
  fs.mkdirSync(SCRATCH, { recursive: true });
  const stale = fs.mkdtempSync(path.join(SCRATCH, 'svr-runner-stale-'));
  const fresh = fs.mkdtempSync(path.join(SCRATCH, 'svr-runner-fresh-'));
  const fourHoursAgo = new Date(Date.now() - 4 * 60 * 60 * 1000);
  fs.utimesSync(stale, fourHoursAgo, fourHoursAgo);
  try {
    const seen = probe({ TMPDIR: ROOT, SVR_TEST_TMPDIR: '' });
    assert.equal(seen.tmpdir, SCRATCH);
    assert.equal(seen.tmpdirType, TMPFS_MAGIC);
    assert.equal(fs.statSync(SCRATCH).mode & 0o1777, 0o1777, 'writable by every user, sticky, like /tmp');
    assert.ok(!fs.existsSync(stale), 'an entry untouched for 4 hours is removed');
    assert.ok(fs.existsSync(fresh), 'a new one (a run going on beside this one) is kept');
  } finally {
    fs.rmSync(stale, { recursive: true, force: true });
    fs.rmSync(fresh, { recursive: true, force: true });
  }
});

test('SVR_TEST_TMPDIR chooses the scratch directory', () => {
  const seen = probe({ SVR_TEST_TMPDIR: ROOT });
  assert.equal(seen.tmpdir, ROOT);
});

test('a folder named runs every *.test.js below it and nothing else there; npm run test:system names test/system', () => {
  const folder = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'svr-runner-folder-'));
  try {
    const probeFile = (name) => `require('node:test')('${name}', () => { console.log('RAN ${name}'); });\n`;
    fs.mkdirSync(path.join(folder, 'deeper'));
    fs.writeFileSync(path.join(folder, 'one.test.js'), probeFile('one'));
    fs.writeFileSync(path.join(folder, 'deeper', 'two.test.js'), probeFile('two'));
    fs.writeFileSync(path.join(folder, 'helper.js'), "console.log('RAN helper');\n");
    const { NODE_TEST_CONTEXT, ...outer } = process.env;
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/test.js'), folder], { encoding: 'utf8', env: outer, timeout: 60000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /RAN one/);
    assert.match(r.stdout, /RAN two/);
    assert.doesNotMatch(r.stdout, /RAN helper/);
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
  const { scripts } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  assert.equal(scripts['test:system'], 'node scripts/test.js test/system');
  assert.ok(fs.readdirSync(path.join(ROOT, 'test', 'system')).some((name) => name.endsWith('.test.js')));
});
