'use strict';
// A real PHP application as a user would run it: Debian's WordPress, with a MariaDB and a PHP-FPM
// the test starts, behind a started svr (`"fastcgi": [{ "upstream": "unix:..." }]`, nothing else).
// The test drives WordPress's own web installer (the database step, then the site step), then
// reads the front page, opens a post by its pretty permalink (svr's front-controller fallback),
// logs in to the admin and uploads an image through it, which svr then serves as a static file.
//
// Packages (installed when missing, as root): wordpress, wordpress-theme-twentytwentythree,
// mariadb-server, php-fpm, php-mysql. WordPress is copied out of /usr/share/wordpress into the
// test's directory without Debian's wp-config.php (which reads /etc/wordpress), so the installer
// writes the site's own.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir, startServer, request, ensureDebianPackage, aptInstall, LineWatcher } = require('../support/helpers');
const { startPhpFpm } = require('../support/php-fpm');

const WORDPRESS = '/usr/share/wordpress';

function ensurePackages() {
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
  assert.equal(init.status, 0, init.stderr);
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
  assert.equal(created.status, 0, created.stderr);
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

function multipart(fields, file) {
  const boundary = `----svr${crypto.randomBytes(8).toString('hex')}`;
  const parts = Object.entries(fields).map(([name, value]) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`), file.data, Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), type: `multipart/form-data; boundary=${boundary}` };
}

test('WordPress from Debian: web installer, front page, pretty permalink, admin login, image upload', { timeout: 600000 }, async (t) => {
  const ready = ensurePackages();
  if (ready.skip) return t.skip(ready.skip);
  const dir = makeTempDir('svr-wordpress-');
  fs.chmodSync(dir, 0o755);
  const site = path.join(dir, 'wordpress');
  const copy = spawnSync('cp', ['-rL', WORDPRESS, site], { encoding: 'utf8' });
  assert.equal(copy.status, 0, copy.stderr);
  fs.rmSync(path.join(site, 'wp-config.php')); // Debian's reads /etc/wordpress: the installer writes the site's own
  fs.rmSync(path.join(site, '.htaccess'), { force: true });
  // PHP-FPM's children run as nobody: they write wp-config.php and wp-content/uploads.
  spawnSync('chown', ['-R', 'nobody:nogroup', site]);

  const db = await startMariadb(dir);
  t.after(() => db.stop());
  const fpm = await startPhpFpm({ maxChildren: 4 });
  if (fpm.skip) return t.skip(fpm.skip);
  t.after(() => fpm.stop());
  const svr = await startServer({ config: { wwwroot: site, fastcgi: [{ upstream: fpm.upstream }] } });
  t.after(() => svr.stop());
  const browser = new Browser(svr.url);

  // 1. A fresh WordPress sends the visitor to its installer.
  const first = await browser.fetch('/');
  assert.equal(first.status, 302, first.text.slice(0, 500));
  assert.match(first.headers.location, /\/wp-admin\/setup-config\.php$/);

  // 2. The installer's database step writes wp-config.php.
  const form = await browser.fetch('/wp-admin/setup-config.php?step=1');
  assert.equal(form.status, 200);
  assert.match(form.text, /name="dbname"/);
  const dbStep = await browser.fetch('/wp-admin/setup-config.php?step=2', {
    method: 'POST',
    form: { dbname: 'wordpress', uname: 'wp', pwd: 'wp-secret', dbhost: `localhost:${db.socket}`, prefix: 'wp_', language: '', submit: 'Submit' },
  });
  assert.equal(dbStep.status, 200, dbStep.text.slice(0, 2000));
  assert.match(dbStep.text, /install\.php/, dbStep.text.slice(0, 2000));
  assert.ok(fs.existsSync(path.join(site, 'wp-config.php')), 'the installer wrote wp-config.php');

  // 3. The site step creates the tables and the admin user.
  const install = await browser.fetch('/wp-admin/install.php?step=2', {
    method: 'POST',
    form: { weblog_title: 'svr WordPress', user_name: 'admin', admin_password: 'correct horse battery staple', admin_password2: 'correct horse battery staple', pw_weak: 'on', admin_email: 'admin@example.com', blog_public: '0', Submit: 'Install WordPress', language: '' },
  });
  assert.equal(install.status, 200, install.text.slice(0, 2000));
  assert.match(install.text, /Success!/);

  // 4. The front page, with the first post.
  const front = await browser.fetch('/');
  assert.equal(front.status, 200);
  assert.match(front.text, /<title>svr WordPress/);
  assert.match(front.text, /Hello world!/);

  // 5. Log in to the admin (WordPress checks that cookies work first).
  browser.cookies.set('wordpress_test_cookie', 'WP%20Cookie%20check');
  const login = await browser.fetch('/wp-login.php', {
    method: 'POST',
    form: { log: 'admin', pwd: 'correct horse battery staple', 'wp-submit': 'Log In', redirect_to: `${svr.url}/wp-admin/`, testcookie: '1' },
  });
  assert.equal(login.status, 302, login.text.slice(0, 2000));
  assert.equal(login.headers.location, `${svr.url}/wp-admin/`);
  const dashboard = await browser.fetch('/wp-admin/');
  assert.equal(dashboard.status, 200);
  assert.match(dashboard.text, /Dashboard/);

  // 6. Pretty permalinks, set through the admin: every post URL then names no file, and svr's
  //    front controller hands it to index.php.
  const permalinkPage = await browser.fetch('/wp-admin/options-permalink.php');
  const nonce = /name="_wpnonce" value="([^"]+)"/.exec(permalinkPage.text);
  assert.ok(nonce, 'the permalink form has its nonce');
  const saved = await browser.fetch('/wp-admin/options-permalink.php', {
    method: 'POST',
    form: { _wpnonce: nonce[1], _wp_http_referer: '/wp-admin/options-permalink.php', selection: '/%year%/%monthnum%/%postname%/', permalink_structure: '/%year%/%monthnum%/%postname%/', category_base: '', tag_base: '', submit: 'Save Changes' },
  });
  assert.equal(saved.status, 302, saved.text.slice(0, 1000));
  assert.equal((await browser.fetch(saved.headers.location)).status, 200, 'the settings page, as a browser follows the redirect (WordPress writes the new rules there)');
  const frontAgain = await browser.fetch('/');
  const link = /href="(http:\/\/127\.0\.0\.1:\d+\/\d{4}\/\d{2}\/hello-world\/)"/.exec(frontAgain.text);
  assert.ok(link, 'the front page links to the post by its pretty permalink');
  const post = await browser.fetch(link[1]);
  assert.equal(post.status, 200, `${link[1]}: ${post.text.match(/<title>[^<]*/)}`);
  assert.match(post.text, /Welcome to WordPress/);
  const missing = await browser.fetch('/2001/01/no-such-post/');
  assert.equal(missing.status, 404, 'WordPress answers its own 404 through the front controller');

  // 7. An image uploaded through the admin's uploader, then served by svr as a static file.
  const uploader = await browser.fetch('/wp-admin/media-new.php?browser-uploader');
  const uploadNonce = /name="_wpnonce" value="([^"]+)"/.exec(uploader.text);
  assert.ok(uploadNonce, 'the upload form has its nonce');
  const image = fs.readFileSync(path.join(site, 'wp-admin/images/w-logo-blue.png'));
  const { body, type } = multipart({ _wpnonce: uploadNonce[1], _wp_http_referer: '/wp-admin/media-new.php?browser-uploader', 'post_id': '0', 'html-upload': 'Upload' }, { field: 'async-upload', name: 'svr-upload.png', type: 'image/png', data: image });
  const uploaded = await browser.fetch('/wp-admin/media-new.php', { method: 'POST', body, type });
  assert.equal(uploaded.status, 302, uploaded.text.slice(0, 2000));
  const library = await browser.fetch('/wp-admin/upload.php?mode=list');
  const url = /(\/wp-content\/uploads\/\d{4}\/\d{2}\/svr-upload\.png)/.exec(library.text);
  assert.ok(url, 'the media library lists the upload');
  const served = await request(svr.url + url[1]);
  assert.equal(served.status, 200);
  assert.equal(served.headers['content-type'], 'image/png');
  assert.ok(served.body.equals(image), 'the uploaded image comes back byte for byte');

  // 8. WordPress's own PHP files are never sent as source.
  const config = await request(`${svr.url}/wp-config.php`);
  assert.ok(!config.text.includes('DB_PASSWORD'), 'wp-config.php runs, its source is not sent');
});
