'use strict';
// install.sh and scripts/uninstall.sh staged into a temporary DESTDIR: what goes where, what a
// second run keeps, when a newer default config goes to .new. Needs no root and no systemd; the
// real thing (users, the unit running, restarts) is test/system/service.test.js in a booted guest.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { unprivilegedUser } = require('../support/helpers');

const ROOT = path.resolve(__dirname, '..', '..');
let dest;

// user: spawn's { uid, gid } to run as another user (see unprivilegedUser).
function sh(script, args = [], env = {}, user = {}) {
  const r = spawnSync(path.join(ROOT, script), args, {
    encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120000, ...user,
  });
  return { code: r.status, out: (r.stdout || '') + (r.stderr || '') };
}
const install = (...args) => sh('install.sh', ['--destdir', dest, ...args]);
const p = (...parts) => path.join(dest, ...parts);
const read = (...parts) => fs.readFileSync(p(...parts), 'utf8');

before(() => { dest = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-install-')); });
after(() => { fs.rmSync(dest, { recursive: true, force: true }); });

test('install.sh --help documents the options and exits 0; an unknown option exits 2', () => {
  const help = sh('install.sh', ['--help']);
  assert.equal(help.code, 0);
  assert.match(help.out, /--no-start/);
  assert.match(help.out, /--destdir/);
  assert.equal(sh('install.sh', ['--bogus']).code, 2);
  const uninstallHelp = sh('scripts/uninstall.sh', ['--help']);
  assert.equal(uninstallHelp.code, 0);
  assert.match(uninstallHelp.out, /--remove-site/);
});

// As root (CI), install.sh runs as nobody: the refusal is about who runs it.
const unprivileged = unprivilegedUser();
test('without root and without DESTDIR, install.sh refuses', { skip: unprivileged.skip ?? false }, () => {
  const r = sh('install.sh', [], {}, unprivileged.user);
  assert.equal(r.code, 1);
  assert.match(r.out, /must run as root/);
});

test('with a Node.js older than 20 first on PATH, install.sh says what it needs and stops', () => {
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-old-node-'));
  try {
    fs.writeFileSync(path.join(bin, 'node'), '#!/bin/sh\ncase "$1" in --version) echo v18.20.8 ;; *) printf 18 ;; esac\n', { mode: 0o755 });
    const staged = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-install-old-'));
    const r = sh('install.sh', ['--destdir', staged], { PATH: `${bin}:${process.env.PATH}` });
    fs.rmSync(staged, { recursive: true, force: true });
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /Node\.js >= 20 is needed \(found: v18\.20\.8\)/);
  } finally {
    fs.rmSync(bin, { recursive: true, force: true });
  }
});

test('a staged install puts code, command, unit, config, site and state in place', () => {
  const r = install();
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Next steps/);
  for (const f of ['usr/lib/svr/svr.js', 'usr/lib/svr/package.json', 'usr/lib/svr/lib', 'usr/lib/svr/config/svr-config.schema.json',
    'usr/lib/svr/scripts/uninstall.sh', 'usr/lib/svr/scripts/setup-system.sh', 'usr/bin/svr', 'usr/lib/systemd/system/svr.service', 'var/www/svr/index.html', 'var/lib/svr']) {
    assert.ok(fs.existsSync(p(f)), `${f} installed`);
  }
  assert.ok(!fs.existsSync(p('usr/lib/svr/test')), 'no tests installed');
  assert.equal(read('var/www/svr/index.html'), fs.readFileSync(path.join(ROOT, 'web/index.html'), 'utf8'));
  assert.equal(read('usr/lib/systemd/system/svr.service').replaceAll(process.execPath, '/usr/bin/node'),
    fs.readFileSync(path.join(ROOT, 'systemd/svr.service'), 'utf8'), 'the unit is systemd/svr.service (node path adjusted)');
  assert.ok(fs.statSync(p('usr/bin/svr')).mode & 0o111, '/usr/bin/svr is executable');
  assert.match(read('usr/bin/svr'), /--config "\/etc\/svr-config\.json"/);
  assert.equal(read('etc/logrotate.d/svr'), fs.readFileSync(path.join(ROOT, 'systemd/svr.logrotate'), 'utf8'), 'the logrotate config');
});

// The installed config is root:svr 640: an admin's `svr check` needs sudo.
test('install.sh\'s next steps and the service docs check the installed config with sudo', () => {
  const r = install();
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /^ +sudo svr check +/m);
  assert.doesNotMatch(r.out, /^ +svr (--check|check)\b/m);
  const operations = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
  const steps = /### Edit, check, apply\n+```\n([\s\S]*?)```/.exec(operations)[1];
  assert.match(steps, /^sudo svr check /m);
  assert.doesNotMatch(steps, /^svr /m);
  const deb = fs.readFileSync(path.join(ROOT, 'docs/debian-package.md'), 'utf8');
  assert.match(deb, /`sudo svr check`/);
  assert.doesNotMatch(deb, /`svr --check`/);
});

test('only production dependencies are installed, every one of them', () => {
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  const prod = Object.entries(lock.packages).filter(([k, e]) => k && !e.dev && !e.devOptional);
  for (const [k, e] of prod) {
    assert.equal(JSON.parse(read('usr/lib/svr', k, 'package.json')).version, e.version, `${k} installed`);
  }
  const top = new Set(prod.map(([k]) => /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(k)[1]));
  for (const name of fs.readdirSync(p('usr/lib/svr/node_modules'))) {
    if (name.startsWith('@')) continue;
    assert.ok(top.has(name), `${name} is a production dependency`);
  }
});

test('the installed config listens on port 80, serves /var/www/svr and points $schema at a file that exists', () => {
  const config = JSON.parse(read('etc/svr-config.json'));
  assert.equal(config.port, 80);
  assert.equal(config.wwwroot, '/var/www/svr');
  if (config.$schema) {
    assert.ok(path.isAbsolute(config.$schema), '$schema is absolute');
    assert.ok(fs.existsSync(p(config.$schema)), `${config.$schema} is installed`);
  }
  const shipped = JSON.parse(fs.readFileSync(path.join(ROOT, 'config/svr-config.json'), 'utf8'));
  for (const [k, v] of Object.entries(shipped)) {
    if (!['port', 'wwwroot', '$schema'].includes(k)) assert.deepEqual(config[k], v, `${k} as shipped`);
  }
});

test('a second run keeps the edited config and the site, writes no .new, and moves mods an older install kept in /usr/lib/svr/mods to /etc/svr/mods, once', () => {
  const edited = read('etc/svr-config.json').replace('"port": 80', '"port": 8081');
  fs.writeFileSync(p('etc/svr-config.json'), edited);
  fs.writeFileSync(p('var/www/svr/index.html'), 'my site');
  fs.writeFileSync(p('usr/lib/svr/mods/my-mod.js'), 'module.exports = {};'); // where an older install kept it
  fs.writeFileSync(p('usr/lib/svr/stale-file-from-an-old-version.js'), '');
  let r = install();
  assert.equal(r.code, 0, r.out);
  assert.equal(read('etc/svr-config.json'), edited, 'config kept');
  assert.ok(!fs.existsSync(p('etc/svr-config.json.new')), 'no .new when the default did not change');
  assert.equal(read('var/www/svr/index.html'), 'my site', 'site kept');
  assert.match(r.out, /moved your mod my-mod\.js from \/usr\/lib\/svr\/mods to \/etc\/svr\/mods/);
  assert.equal(read('etc/svr/mods/my-mod.js'), 'module.exports = {};', 'the mod is in /etc/svr/mods');
  assert.deepEqual(fs.readdirSync(p('usr/lib/svr/mods')), ['README.md'], 'package space holds only svr\'s README');
  assert.ok(!fs.existsSync(p('usr/lib/svr/stale-file-from-an-old-version.js')), 'the code is replaced whole');
  r = install();
  assert.equal(r.code, 0, r.out);
  assert.doesNotMatch(r.out, /moved your mod/, 'migrated once');
  assert.equal(read('etc/svr/mods/my-mod.js'), 'module.exports = {};', 'and kept by the next upgrade');
});

test('the unit and the command take mods from /etc/svr/mods (ConfigurationDirectory=svr)', () => {
  assert.match(read('usr/lib/systemd/system/svr.service'), /^ConfigurationDirectory=svr$/m);
  assert.match(read('usr/bin/svr'), /^CONFIGURATION_DIRECTORY=\/etc\/svr$/m);
  assert.equal(fs.statSync(p('etc/svr/mods')).mode & 0o777, 0o755);
});

test('no node_modules and no npm (Debian 13\'s nodejs): install.sh says how to go on', () => {
  const src = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-install-nonpm-'));
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-install-bin-'));
  const staged = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-install-staged-'));
  try {
    const copy = spawnSync('sh', ['-c', 'tar -C "$0" --exclude=./.git --exclude=./node_modules --exclude=./test -cf - . | tar -C "$1" -xf -', ROOT, src]);
    assert.equal(copy.status, 0, String(copy.stderr));
    // Every command of /usr/bin and /bin but npm.
    for (const dir of ['/usr/bin', '/bin', path.dirname(process.execPath)]) {
      for (const name of fs.readdirSync(dir)) {
        if (name === 'npm' || name === 'npx' || fs.existsSync(path.join(bin, name))) continue;
        fs.symlinkSync(path.join(dir, name), path.join(bin, name));
      }
    }
    const r = spawnSync(path.join(src, 'install.sh'), ['--destdir', staged], { encoding: 'utf8', env: { ...process.env, PATH: bin }, timeout: 120000 });
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 1, out);
    assert.match(out, /there is no npm to run 'npm ci --omit=dev'/);
    assert.match(out, /sudo apt-get install npm +then run this again/);
    assert.match(out, /sudo apt-get install \.\/svr_\*\.deb/);
  } finally {
    for (const dir of [src, bin, staged]) fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('when the shipped default changed since the last install, it goes to /etc/svr-config.json.new', () => {
  const before = read('etc/svr-config.json');
  // As if the previous install had shipped a different default.
  fs.writeFileSync(p('usr/lib/svr/config/svr-config.installed.json'), '{"port": 80}\n');
  const r = install();
  assert.equal(r.code, 0, r.out);
  assert.equal(read('etc/svr-config.json'), before, 'config kept');
  assert.match(r.out, /svr-config\.json\.new/);
  assert.deepEqual(JSON.parse(read('etc/svr-config.json.new')), JSON.parse(read('usr/lib/svr/config/svr-config.installed.json')));
});

test('install.sh --node PATH: the command and the unit run that node', () => {
  const staged = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-install-node-'));
  try {
    const r = sh('install.sh', ['--destdir', staged, '--node', '/opt/node-test/bin/node']);
    assert.equal(r.code, 0, r.out);
    const unit = fs.readFileSync(path.join(staged, 'usr/lib/systemd/system/svr.service'), 'utf8');
    assert.match(unit, /^ExecStart=\/opt\/node-test\/bin\/node \/usr\/lib\/svr\/svr\.js /m);
    assert.ok(!unit.includes(process.execPath + ' '), 'the unit does not name the node that ran install.sh');
    assert.match(fs.readFileSync(path.join(staged, 'usr/bin/svr'), 'utf8'), /exec "\/opt\/node-test\/bin\/node" /);
    assert.equal(sh('install.sh', ['--destdir', staged, '--node', 'node']).code, 1, 'a relative --node is refused');
  } finally {
    fs.rmSync(staged, { recursive: true, force: true });
  }
});

test('uninstall.sh removes code, command and unit, keeps config, mods, site, state and logs, and says so', () => {
  fs.mkdirSync(p('var/log/svr'), { recursive: true }); // made by the unit's LogsDirectory=
  fs.writeFileSync(p('var/log/svr/access.log'), 'a line\n');
  const r = sh('scripts/uninstall.sh', ['--destdir', dest]);
  assert.equal(r.code, 0, r.out);
  for (const f of ['usr/lib/svr', 'usr/bin/svr', 'usr/lib/systemd/system/svr.service']) assert.ok(!fs.existsSync(p(f)), `${f} removed`);
  for (const f of ['etc/svr-config.json', 'etc/svr/mods/my-mod.js', 'var/www/svr/index.html', 'var/lib/svr', 'var/log/svr/access.log', 'etc/logrotate.d/svr']) {
    assert.ok(fs.existsSync(p(f)), `${f} kept`);
  }
  assert.match(r.out, /^Kept: \/etc\/svr-config\.json, \/etc\/svr\/mods, \/var\/lib\/svr, \/var\/log\/svr, \/etc\/logrotate\.d\/svr, the user svr \(remove them with --purge\)\.$/m);
  assert.match(r.out, /Kept the site \/var\/www\/svr \(remove it with --remove-site\)/);
});

test('uninstall.sh --purge removes config and state but never the site; only --remove-site does', () => {
  fs.writeFileSync(p('var/www/svr/serverSideScript.js'), '// my script');
  let r = sh('scripts/uninstall.sh', ['--destdir', dest, '--purge']);
  assert.equal(r.code, 0, r.out);
  for (const f of ['etc/svr-config.json', 'etc/svr-config.json.new', 'etc/svr', 'var/lib/svr', 'var/log/svr', 'etc/logrotate.d/svr']) assert.ok(!fs.existsSync(p(f)), `${f} purged`);
  assert.equal(read('var/www/svr/index.html'), 'my site', 'the site survives --purge');
  assert.equal(read('var/www/svr/serverSideScript.js'), '// my script');
  assert.match(r.out, /remove it with --remove-site/);
  r = sh('scripts/uninstall.sh', ['--destdir', dest, '--purge', '--remove-site']);
  assert.equal(r.code, 0, r.out);
  assert.ok(!fs.existsSync(p('var/www/svr')), 'the site is removed with --remove-site');
  assert.match(r.out, /removed the site \/var\/www\/svr/);
});
