'use strict';
// scripts/test.js (npm test): what it gives the test files it runs. Node's start-up without the
// CA bundle of NODE_EXTRA_CA_CERTS, scratch files on tmpfs when the machine has one, a directory
// for the run's shared test keys. scripts/test-node-matrix.js: the same under each Node version.
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
  return probes('scripts/test.js', env)[0];
}

// Each environment the probe file reported when `script` ran it.
function probes(script, env, timeout = 60000) {
  // Without NODE_TEST_CONTEXT, which tells a process that it is a test file of an outer runner.
  const { NODE_TEST_CONTEXT, ...outer } = process.env;
  const r = spawnSync(process.execPath, [path.join(ROOT, script), PROBE], {
    encoding: 'utf8', env: { ...outer, ...env }, timeout,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const lines = [...r.stdout.matchAll(/PROBE (\{.*\})/g)];
  assert.ok(lines.length, r.stdout);
  return Object.assign(lines.map((line) => JSON.parse(line[1])), { stderr: r.stderr });
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

test('the test files share a keys directory for the run, removed when the run ends', () => {
  const seen = probe({});
  assert.ok(seen.keysDir, 'SVR_TEST_KEYS_DIR is set');
  assert.equal(seen.keysDirExists, true);
  assert.equal(fs.existsSync(seen.keysDir), false, 'removed after the run');
});

test('npm run test:node-matrix runs the files under each version asked for and names each outcome', (t) => {
  // Only majors already installed: the test does not download Node (the matrix does, once).
  const cache = path.join(ROOT, 'node_modules', '.cache', 'node-matrix');
  const cached = fs.existsSync(cache) ? fs.readdirSync(cache).filter((v) => fs.existsSync(path.join(cache, v, 'node_modules', 'node', 'bin', 'node'))) : [];
  const running = process.versions.node.split('.')[0];
  const majors = [running, ...cached.filter((v) => v !== running)];
  if (majors.length === 1) t.diagnostic('only the running Node is installed for the matrix: one version checked');
  const seen = probes('scripts/test-node-matrix.js', { SVR_NODE_MATRIX: majors.join(',') }, 180000);
  assert.deepEqual(seen.map((s) => s.nodeVersion.slice(1).split('.')[0]), majors.map((v) => v.split('.')[0]));
  for (const s of seen) assert.match(seen.stderr, new RegExp(`${s.nodeVersion.replace(/\./g, '\\.')}: passed`));
  const { scripts } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  assert.equal(scripts['test:node-matrix'], 'node scripts/test-node-matrix.js');
});
