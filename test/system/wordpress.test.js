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
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir, startServer, request } = require('../support/helpers');
const { startPhpFpm } = require('../support/php-fpm');
const { ensureWordPress, copyWordPress, startMariadb, Browser, installThroughWeb, multipart, ADMIN_PASSWORD } = require('../support/wordpress');

test('WordPress from Debian: web installer, front page, pretty permalink, admin login, image upload', { timeout: 600000 }, async (t) => {
  const ready = ensureWordPress();
  if (ready.skip) return t.skip(ready.skip);
  const dir = makeTempDir('svr-wordpress-');
  const site = copyWordPress(dir);

  const db = await startMariadb(dir);
  t.after(() => db.stop());
  const fpm = await startPhpFpm({ maxChildren: 4 });
  if (fpm.skip) return t.skip(fpm.skip);
  t.after(() => fpm.stop());
  const svr = await startServer({ config: { wwwroot: site, fastcgi: [{ upstream: fpm.upstream }] } });
  t.after(() => svr.stop());
  const browser = new Browser(svr.url);

  // 1-3. A fresh WordPress sends the visitor to its installer; its database step writes
  //      wp-config.php, its site step creates the tables and the administrator.
  const steps = await installThroughWeb(browser, db.socket);
  assert.equal(steps.first.status, 302, steps.first.text.slice(0, 500));
  assert.match(steps.first.headers.location, /\/wp-admin\/setup-config\.php$/);
  assert.equal(steps.form.status, 200);
  assert.match(steps.form.text, /name="dbname"/);
  assert.equal(steps.database.status, 200, steps.database.text.slice(0, 2000));
  assert.match(steps.database.text, /install\.php/, steps.database.text.slice(0, 2000));
  assert.ok(fs.existsSync(path.join(site, 'wp-config.php')), 'the installer wrote wp-config.php');
  assert.equal(steps.site.status, 200, steps.site.text.slice(0, 2000));
  assert.match(steps.site.text, /Success!/);

  // 4. The front page, with the first post.
  const front = await browser.fetch('/');
  assert.equal(front.status, 200);
  assert.match(front.text, /<title>svr WordPress/);
  assert.match(front.text, /Hello world!/);

  // 5. Log in to the admin (WordPress checks that cookies work first).
  browser.cookies.set('wordpress_test_cookie', 'WP%20Cookie%20check');
  const login = await browser.fetch('/wp-login.php', {
    method: 'POST',
    form: { log: 'admin', pwd: ADMIN_PASSWORD, 'wp-submit': 'Log In', redirect_to: `${svr.url}/wp-admin/`, testcookie: '1' },
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
