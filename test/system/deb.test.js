'use strict';
// The version svr reports is the same everywhere (package.json, CHANGELOG.md, svr --version, the
// Debian package), and the package built by scripts/build-deb.sh holds what it should and passes
// lintian without errors. Installing, upgrading and purging it in a booted Debian is in
// test/system/service.test.js.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ensureDebianPackage } = require('../support/helpers');

const ROOT = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 300000, ...opts });
  return { code: r.status, stdout: r.stdout || '', stderr: r.stderr || '', error: r.error };
}
const has = (cmd) => run('sh', ['-c', `command -v ${cmd}`]).code === 0;

// `svr/0.1.0 (Linux; Node.js/v20.19.2)` -> 0.1.0
const reported = (out) => (/^svr\/(\S+) /.exec(out.trim()) || [])[1];

test('svr --version prints package.json\'s version', () => {
  const r = run(process.execPath, [path.join(ROOT, 'svr.js'), '--version']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(reported(r.stdout), pkg.version, r.stdout);
});

test('CHANGELOG.md\'s latest released heading is package.json\'s version; it has an Unreleased section', () => {
  const log = fs.readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8');
  const headings = [...log.matchAll(/^## \[([^\]]+)\]/gm)].map((m) => m[1]);
  assert.equal(headings[0], 'Unreleased', 'the first section collects unreleased changes');
  const released = headings.find((h) => h !== 'Unreleased');
  assert.equal(released, pkg.version, `latest released heading ${released}, package.json ${pkg.version}`);
  assert.match(log, new RegExp(`^## \\[${pkg.version.replace(/\./g, '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}$`, 'm'), 'the release has a date');
});

test('LICENSE is the MIT license package.json names, for the svr authors', () => {
  assert.equal(pkg.license, 'MIT');
  const text = fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8');
  assert.match(text, /^MIT License\n/);
  assert.match(text, /Copyright \(c\) \d{4} the svr authors/);
});

test('package.json asks for Node.js 20 or newer', () => {
  assert.equal(pkg.engines.node, '>=20');
});

// --- the package -------------------------------------------------------------------------------
const skipDeb = !has('dpkg-deb') ? 'needs dpkg-deb (Debian)' : !has('npm') ? 'needs npm' : false;
let out;
let deb;
let extracted;
let buildLog;

before(() => {
  if (skipDeb) return;
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-deb-'));
  // xz at level 1 instead of dpkg-deb's 6 (~2 s less CPU): the same files and control data, which
  // are what these tests and lintian read; the compression level is dpkg-deb's own business.
  // npm ci may reach the registry: the CA certificates scripts/test.js kept from the other tests.
  const env = { ...process.env, DPKG_DEB_COMPRESSOR_LEVEL: '1' };
  if (env.SVR_TEST_NODE_EXTRA_CA_CERTS) env.NODE_EXTRA_CA_CERTS = env.SVR_TEST_NODE_EXTRA_CA_CERTS;
  const r = run(path.join(ROOT, 'scripts/build-deb.sh'), ['--out', out], { env });
  assert.equal(r.code, 0, `scripts/build-deb.sh failed:\n${r.stderr}`);
  deb = r.stdout.trim();
  buildLog = r.stderr;
  extracted = path.join(out, 'x');
  assert.equal(run('dpkg-deb', ['-x', deb, extracted]).code, 0);
});
after(() => { if (out) fs.rmSync(out, { recursive: true, force: true }); });

const field = (name) => run('dpkg-deb', ['-f', deb, name]).stdout.trim();
const x = (...parts) => path.join(extracted, ...parts);

test('build-deb.sh writes svr_<package.json version>_all.deb depending on nodejs >= 20', { skip: skipDeb }, () => {
  assert.equal(path.basename(deb), `svr_${pkg.version}_all.deb`);
  assert.equal(field('Package'), 'svr');
  assert.equal(field('Version'), pkg.version);
  assert.equal(field('Architecture'), 'all');
  assert.match(field('Depends'), /(^|, )nodejs \(>= 20\)(,|$)/);
  const r = run(process.execPath, [x('usr/lib/svr/svr.js'), '--version']);
  assert.equal(reported(r.stdout), pkg.version, `svr --version of the packaged code: ${r.stdout}${r.stderr}`);
  assert.match(zcat(x('usr/share/doc/svr/changelog.gz')), new RegExp(`^svr \\(${pkg.version.replace(/\./g, '\\.')}\\) `));
});

test('/etc/svr-config.json and /etc/logrotate.d/svr are the conffiles; the site and the state are not package files', { skip: skipDeb }, () => {
  const control = path.join(out, 'control');
  assert.equal(run('dpkg-deb', ['-e', deb, control]).code, 0);
  assert.equal(fs.readFileSync(path.join(control, 'conffiles'), 'utf8'), '/etc/svr-config.json\n/etc/logrotate.d/svr\n');
  for (const s of ['postinst', 'prerm', 'postrm']) {
    assert.ok(fs.statSync(path.join(control, s)).mode & 0o100, `${s} is executable`);
  }
  const config = JSON.parse(fs.readFileSync(x('etc/svr-config.json'), 'utf8'));
  assert.equal(config.port, 80);
  assert.equal(config.wwwroot, '/var/www/svr');
  const list = run('dpkg-deb', ['-c', deb]).stdout;
  assert.doesNotMatch(list, / \.\/var\//, 'nothing under /var: postinst makes /var/www/svr and /var/lib/svr');
  assert.doesNotMatch(list, / \.\/usr\/lib\/svr\/test\//, 'no tests');
  assert.doesNotMatch(list, /uninstall\.sh|svr-config\.installed\.json/, 'apt-get removes the package, not uninstall.sh');
  assert.match(list, / \.\/usr\/lib\/svr\/scripts\/setup-system\.sh$/m, 'postinst needs setup-system.sh');
  assert.match(list, /^-rw-r--r-- root\/root .* \.\/usr\/lib\/systemd\/system\/svr\.service$/m);
  assert.match(list, /^-rwxr-xr-x root\/root .* \.\/usr\/bin\/svr$/m);
});

test('the command and the unit run Debian\'s /usr/bin/node', { skip: skipDeb }, () => {
  const unit = fs.readFileSync(x('usr/lib/systemd/system/svr.service'), 'utf8');
  for (const line of unit.split('\n').filter((l) => /^Exec/.test(l))) {
    assert.match(line, /^Exec\w+=\/usr\/bin\/node /, line);
  }
  assert.equal(unit, fs.readFileSync(path.join(ROOT, 'systemd/svr.service'), 'utf8'), 'the unit is systemd/svr.service');
  assert.match(fs.readFileSync(x('usr/bin/svr'), 'utf8'), /exec "\/usr\/bin\/node" "\/usr\/lib\/svr\/svr\.js" --config "\/etc\/svr-config\.json"/);
});

test('the production dependencies are bundled at their locked versions, without dev dependencies', { skip: skipDeb }, () => {
  const prod = Object.entries(lock.packages).filter(([k, e]) => k && !e.dev && !e.devOptional);
  for (const [k, e] of prod) {
    assert.equal(JSON.parse(fs.readFileSync(x('usr/lib/svr', k, 'package.json'), 'utf8')).version, e.version, `${k} bundled`);
  }
  for (const dev of Object.keys(pkg.devDependencies || {})) {
    assert.ok(!fs.existsSync(x('usr/lib/svr/node_modules', dev)), `dev dependency ${dev} not bundled`);
  }
  const copyright = fs.readFileSync(x('usr/share/doc/svr/copyright'), 'utf8');
  assert.match(copyright, /Copyright: the svr authors/);
  for (const dep of Object.keys(pkg.dependencies)) assert.match(copyright, new RegExp(`^  ${dep} \\S+: `, 'm'), `${dep} in copyright`);
});

test('the build prints the package\'s size and installed size; docs/debian-package.md gives the installed size it prints', { skip: skipDeb }, () => {
  const m = /^build-deb: built (\S+): (\d+) KiB, (\d+) KiB installed$/m.exec(buildLog);
  assert.ok(m, buildLog);
  assert.equal(m[1], deb);
  assert.equal(Number(m[2]), Math.floor(fs.statSync(deb).size / 1024), 'the size of the file');
  assert.equal(Number(m[3]), Number(field('Installed-Size')), 'the control file\'s Installed-Size');
  // The installed size does not depend on the compression level this test builds with.
  const docs = fs.readFileSync(path.join(ROOT, 'docs/debian-package.md'), 'utf8');
  const said = /about [\d.]+ MiB \(([\d.]+) MiB installed/.exec(docs);
  assert.ok(said, 'docs/debian-package.md gives the sizes');
  const installedMB = Number(m[3]) / 1024;
  assert.ok(Math.abs(Number(said[1]) - installedMB) <= 0.5, `docs say ${said[1]} MiB installed, the build ${installedMB.toFixed(1)} MiB`);
});

test('build-deb.sh refuses a version dpkg would read as having a Debian revision', { skip: skipDeb }, () => {
  const r = run(path.join(ROOT, 'scripts/build-deb.sh'), ['--version', '1.0-1', '--out', out]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /not a usable version: 1\.0-1/);
});

// lintian is large; installed when running as root, else the test skips without it.
const lintian = skipDeb ? { skip: skipDeb } : ensureDebianPackage('lintian');

test('lintian reports no errors', { skip: lintian.skip ?? false }, (t) => {
  const r = run('lintian', ['--no-tag-display-limit', deb]);
  const tags = r.stdout.split('\n').filter((l) => /^[EW]: /.test(l));
  for (const tag of tags) t.diagnostic(tag);
  assert.deepEqual(tags.filter((l) => l.startsWith('E: ')), [], `lintian errors:\n${r.stdout}${r.stderr}`);
  assert.equal(r.code, 0, `lintian exit status ${r.code}: ${r.stderr}`);
});

function zcat(file) {
  return require('node:zlib').gunzipSync(fs.readFileSync(file)).toString('utf8');
}
