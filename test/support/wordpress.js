'use strict';
// Debian's WordPress for the system test and the PHP bench: the packages, a private MariaDB, a
// copy of the site, a browser's cookie jar, and WordPress's web installer driven as a visitor
// goes through it.
//
//   ensureWordPress() -> {} | { skip }       the packages (installed when missing, as root)
//   startMariadb(dir) -> { socket, stop() }  on a Unix socket in dir, database `wordpress`,
//                                            user wp / wp-secret
//   copyWordPress(dir) -> site directory
//   new Browser(baseUrl).fetch(url, { method, form, body, type })  cookies kept
//   installThroughWeb(browser, dbSocket) -> { first, form, database, site } responses
//   ADMIN_PASSWORD                           the administrator `admin`'s password

const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { request, ensureDebianPackage, aptInstall, LineWatcher } = require('./helpers');

const WORDPRESS = '/usr/share/wordpress';
const ADMIN_PASSWORD = 'correct horse battery staple';

function ensureWordPress() {
  if (process.getuid() !== 0) return { skip: 'needs root: the test installs WordPress and MariaDB, and runs them' };
  for (const [command, pkg] of [['mariadbd', 'mariadb-server'], ['mariadb-install-db', 'mariadb-server']]) {
    const found = ensureDebianPackage(command, pkg);
    if (found.skip) return found;
  }
  for (const [file, pkg] of [[path.join(WORDPRESS, 'wp-login.php'), 'wordpress'], [path.join(WORDPRESS, 'wp-content/themes/twentytwentythree/style.css'), 'wordpress-theme-twentytwentythree']]) {
    if (!fs.existsSync(file)) aptInstall(pkg);
    if (!fs.existsSync(file)) return { skip: `apt-get install ${pkg} failed` };
  }
  const phpMysql = spawnSync('sh', ['-c', 'ls /etc/php/*/mods-available/mysqli.ini'], { encoding: 'utf8' });
  if (phpMysql.status !== 0) aptInstall('php-mysql');
  return {};
}

// MariaDB on a Unix socket in dir, no TCP. -> { socket, stop() }
async function startMariadb(dir) {
  const data = path.join(dir, 'mysql');
  const socket = path.join(dir, 'mysql.sock');
  const init = spawnSync('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--user=root', '--skip-test-db', '--auth-root-authentication-method=socket'], { encoding: 'utf8', timeout: 120000 });
  if (init.status !== 0) throw new Error(`mariadb-install-db failed: ${init.stderr}`);
  const child = spawn('mariadbd', ['--no-defaults', `--datadir=${data}`, `--socket=${socket}`, '--skip-networking', '--user=root', `--pid-file=${path.join(dir, 'mysql.pid')}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log = new LineWatcher(child.stderr);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await log.waitFor(/ready for connections/, 0, 60000);
  } catch (error) {
    await stop();
    throw error;
  }
  const sql = 'CREATE DATABASE wordpress; CREATE USER wp@localhost IDENTIFIED BY \'wp-secret\'; GRANT ALL ON wordpress.* TO wp@localhost;';
  const created = spawnSync('mariadb', ['--no-defaults', '-S', socket, '-u', 'root', '-e', sql], { encoding: 'utf8' });
  if (created.status !== 0) {
    await stop();
    throw new Error(`creating the database failed: ${created.stderr}`);
  }
  return { socket, stop };
}

// A browser's cookie jar, enough for WordPress's login.
class Browser {
  constructor(base) {
    this.base = base;
    this.cookies = new Map();
  }

  async fetch(url, { method = 'GET', form, body, type } = {}) {
    const headers = { cookie: [...this.cookies].map(([n, v]) => `${n}=${v}`).join('; ') };
    let data = body;
    if (form) {
      data = new URLSearchParams(form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    if (type) headers['content-type'] = type;
    if (data !== undefined) headers['content-length'] = Buffer.byteLength(data);
    const res = await request(url.startsWith('http') ? url : this.base + url, { method, headers, body: data, timeout: 60000 });
    for (const line of [].concat(res.headers['set-cookie'] || [])) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (/expires=Thu, 01-Jan-1970|Max-Age=0/i.test(line) || value === 'deleted') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
}

// A copy of Debian's WordPress in dir/wordpress, without Debian's wp-config.php (which reads
// /etc/wordpress: the installer writes the site's own), owned by the user PHP-FPM's children run
// as (they write wp-config.php and wp-content/uploads). -> the copy's path
function copyWordPress(dir) {
  fs.chmodSync(dir, 0o755);
  const site = path.join(dir, 'wordpress');
  const copy = spawnSync('cp', ['-rL', WORDPRESS, site], { encoding: 'utf8' });
  if (copy.status !== 0) throw new Error(`copying ${WORDPRESS} failed: ${copy.stderr}`);
  fs.rmSync(path.join(site, 'wp-config.php'));
  fs.rmSync(path.join(site, '.htaccess'), { force: true });
  spawnSync('chown', ['-R', process.getuid() === 0 ? 'nobody:nogroup' : String(process.getuid()), site]);
  return site;
}

// WordPress's web installer, as a visitor goes through it: the front page (a redirect to the
// installer), the database form and step, the site step. -> each step's response
async function installThroughWeb(browser, dbSocket) {
  const first = await browser.fetch('/');
  const form = await browser.fetch('/wp-admin/setup-config.php?step=1');
  const database = await browser.fetch('/wp-admin/setup-config.php?step=2', {
    method: 'POST',
    form: { dbname: 'wordpress', uname: 'wp', pwd: 'wp-secret', dbhost: `localhost:${dbSocket}`, prefix: 'wp_', language: '', submit: 'Submit' },
  });
  const site = await browser.fetch('/wp-admin/install.php?step=2', {
    method: 'POST',
    form: { weblog_title: 'svr WordPress', user_name: 'admin', admin_password: ADMIN_PASSWORD, admin_password2: ADMIN_PASSWORD, pw_weak: 'on', admin_email: 'admin@example.com', blog_public: '0', Submit: 'Install WordPress', language: '' },
  });
  return { first, form, database, site };
}

function multipart(fields, file) {
  const boundary = `----svr${crypto.randomBytes(8).toString('hex')}`;
  const parts = Object.entries(fields).map(([name, value]) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`), file.data, Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), type: `multipart/form-data; boundary=${boundary}` };
}

module.exports = { ensureWordPress, startMariadb, copyWordPress, Browser, installThroughWeb, multipart, ADMIN_PASSWORD, WORDPRESS };
