'use strict';
// svr's pages as people see them: the default site, a directory listing and a 404, in headless
// Chromium (Debian's chromium) at 1200 px and 400 px, light and dark. Each must fit its width (no
// horizontal scrolling); the screenshots are what docs/screenshots/ shows
// (SVR_UPDATE_SCREENSHOTS=1 writes them there).

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { startServer, request, ensureDebianPackage } = require('./helpers');

const WEB = path.join(__dirname, '..', 'web');
const SHOTS = path.join(__dirname, '..', 'docs', 'screenshots');
const PAGES = { home: '/', listing: '/downloads/', 404: '/no-such-page' };
const WIDTHS = [1200, 400];
const SCHEMES = { light: 1, dark: 0 }; // Blink's preferredColorScheme: 0 dark, 1 light

// Measures pages inside iframes of given widths (same origin, so the wrapper can read them), all
// in one browser start: the hash is "path|width,path|width,...", the title becomes
// "measured scrollWidth clientWidth,..." in that order once every frame has loaded.
const MEASURE = `<!DOCTYPE html><body style="margin:0"><script>
var qs = location.hash.slice(1).split(','), out = [], left = qs.length;
qs.forEach(function (pair, i) {
  var q = pair.split('|'), f = document.createElement('iframe');
  f.style.cssText = 'display:block;border:0;height:900px;width:' + q[1] + 'px';
  f.onload = function () { var d = f.contentDocument.documentElement;
    out[i] = d.scrollWidth + ' ' + d.clientWidth;
    if (--left === 0) document.title = 'measured ' + out.join(','); };
  f.src = q[0]; document.body.appendChild(f);
});
</script></body>`;

// Clicks the listing's Size header twice and reports the names in order after each click.
const SORT = `<!DOCTYPE html><body><script>
var f = document.createElement('iframe');
f.onload = function () { var d = f.contentDocument, b = d.querySelectorAll('th button')[1], out = [];
  function names() { return [].map.call(d.querySelectorAll('tbody tr:not([data-keep]) td.n a'), function (a) { return a.textContent; }).join(','); }
  b.click(); out.push(names()); b.click(); out.push(names());
  document.title = 'sorted ' + out.join(' | '); };
f.src = '/downloads/'; document.body.appendChild(f);
</script></body>`;

function siteFiles() {
  const files = { 'measure.html': MEASURE, 'sort.html': SORT };
  for (const name of fs.readdirSync(WEB)) files[name] = fs.readFileSync(path.join(WEB, name));
  Object.assign(files, {
    'downloads/annual-report-2026-final-version-approved-by-the-board.pdf': Buffer.alloc(2_400_000),
    'downloads/photos-from-the-summer-trip/a.jpg': 'x',
    'downloads/README.txt': 'read me',
    'downloads/svr_1.0.0_all.deb': Buffer.alloc(180_000),
    'downloads/very_long_file_name_without_any_spaces_or_dashes_at_all_1234567890.tar.gz': 'x',
  });
  return files;
}

describe('svr pages in headless Chromium: 1200 px and 400 px, light and dark', () => {
  const browser = ensureDebianPackage('chromium');
  let srv;
  let profile;
  const CASES = Object.entries(PAGES).flatMap(([name, urlPath]) => WIDTHS.map((width) => ({ name, urlPath, width })));
  let measured; // "scrollWidth clientWidth" per case, or the page Chromium returned when it failed
  before(async () => {
    if (!browser.path) return;
    srv = await startServer({ config: { enableDirectoryListing: true }, files: siteFiles() });
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-chromium-'));
    const dom = chromium(['--dump-dom', '--virtual-time-budget=5000', '--window-size=1300,1000',
      `${srv.url}/measure.html#${CASES.map((c) => `${c.urlPath}|${c.width}`).join(',')}`]);
    const m = /<title>measured (.*)<\/title>/.exec(dom);
    measured = m ? m[1].split(',') : dom.slice(0, 300);
  });
  after(async () => {
    if (srv) await srv.stop();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  function chromium(args) {
    const result = spawnSync(browser.path, [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--hide-scrollbars',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--user-data-dir=${profile}`, ...args,
    ], { timeout: 60000, encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    return result.stdout;
  }

  CASES.forEach(({ name, urlPath, width }, i) => {
    it(`${name} at ${width} px: no horizontal scrolling; screenshots light and dark`, { skip: browser.skip ?? false }, () => {
      assert.ok(Array.isArray(measured), `the pages were measured: ${measured}`);
      const m = /^(\d+) (\d+)$/.exec(measured[i]);
      assert.ok(m, `${urlPath} at ${width} px was measured: ${measured[i]}`);
      assert.ok(Number(m[1]) <= Number(m[2]), `${urlPath} is ${m[1]} px wide in a ${m[2]} px viewport`);
      for (const [scheme, value] of Object.entries(SCHEMES)) {
        const file = `${name}-${width}-${scheme}.png`;
        const shot = process.env.SVR_UPDATE_SCREENSHOTS ? path.join(SHOTS, file) : path.join(profile, file);
        chromium([`--blink-settings=preferredColorScheme=${value}`, `--screenshot=${shot}`,
          `--window-size=${width},${width === 400 ? 860 : 760}`, `${srv.url}${urlPath}`]);
        const png = fs.readFileSync(shot);
        assert.equal(png.subarray(1, 4).toString(), 'PNG');
        assert.ok(png.length > 8000, `${file} is only ${png.length} bytes: a blank page?`);
      }
    });
  });

  it('a click on a column header sorts by it, a second click reverses; directories stay first', { skip: browser.skip ?? false }, () => {
    const dom = chromium(['--dump-dom', '--virtual-time-budget=5000', `${srv.url}/sort.html`]);
    const m = /<title>sorted (.*) \| (.*)<\/title>/.exec(dom);
    assert.ok(m, dom.slice(0, 300));
    const bySize = ['very_long_file_name_without_any_spaces_or_dashes_at_all_1234567890.tar.gz', 'README.txt',
      'svr_1.0.0_all.deb', 'annual-report-2026-final-version-approved-by-the-board.pdf'];
    const dir = 'photos-from-the-summer-trip/';
    assert.equal(m[1], [dir, ...bySize].join(','));
    assert.equal(m[2], [dir, ...[...bySize].reverse()].join(','));
  });

  it('the favicon is there: a fresh install logs no 404 for /favicon.ico', { skip: browser.skip ?? false }, async () => {
    const icon = await request(`${srv.url}/favicon.ico`);
    assert.equal(icon.status, 200);
    assert.match(icon.headers['content-type'], /^image\/(x-icon|vnd\.microsoft\.icon)/);
    assert.ok(!srv.stdout().some((line) => / "GET \/favicon\.ico HTTP\/1\.1" 404 /.test(line)), 'no 404 logged for the favicon');
  });

  it('the 404 page links back to the site root', { skip: browser.skip ?? false }, async () => {
    const page = await request(`${srv.url}/no-such-page`);
    assert.equal(page.status, 404);
    assert.match(page.text, /<a href="\/">Go to the home page<\/a>/);
  });
});
