'use strict';
// svr's pages as people see them: the default site, a directory listing and a 404, in headless
// Chromium (Debian's chromium) at 1200 px and 400 px, light and dark. Each must fit its width (no
// horizontal scrolling); the screenshots are what docs/screenshots/ shows
// (SVR_UPDATE_SCREENSHOTS=1 writes them there).
//
// One Chromium start for the whole file, driven by playwright-core (the library only: it downloads
// no browser; it launches Debian's). Every start of Chromium costs about half a second of CPU in a
// dozen processes, and there were fourteen. The pages are stage behaviour, so the in-process
// harness serves them.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { chromium } = require('playwright-core');
const { request, ensureDebianPackage } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');

const WEB = path.join(__dirname, '..', '..', 'web');
const SHOTS = path.join(__dirname, '..', '..', 'docs', 'screenshots');
const PAGES = { home: ['/', 200], listing: ['/downloads/', 200], 404: ['/no-such-page', 404] };
const WIDTHS = [1200, 400];
const HEIGHTS = { 1200: 760, 400: 860 }; // the screenshots' sizes
const SCHEMES = ['light', 'dark'];
// --headless is playwright's headless option; --no-sandbox because CI runs as root; without the
// background-networking ones, Chromium keeps trying hosts this closed network refuses.
// playwright-core gives the browser a fresh temporary profile and removes it at close.
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--hide-scrollbars',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

function siteFiles() {
  const files = {};
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
  const installed = ensureDebianPackage('chromium');
  const skip = installed.skip ?? false;
  let srv;
  let browser;
  let page; // one tab for every page, width and scheme in turn: the tests run one after another
  before(async () => {
    if (skip) return;
    srv = await startPipeline({ config: { enableDirectoryListing: true }, files: siteFiles() });
    browser = await chromium.launch({ executablePath: installed.path, headless: true, args: FLAGS, timeout: 60000 });
    page = await browser.newPage();
  });
  after(async () => {
    if (browser) await browser.close();
    if (srv) await srv.stop();
  });

  for (const [name, [urlPath, status]] of Object.entries(PAGES)) {
    for (const width of WIDTHS) {
      it(`${name} at ${width} px: no horizontal scrolling; screenshots light and dark`, { skip }, async () => {
        await page.setViewportSize({ width, height: HEIGHTS[width] });
        for (const colorScheme of SCHEMES) {
          await page.emulateMedia({ colorScheme });
          const response = await page.goto(`${srv.url}${urlPath}`);
          assert.equal(response.status(), status, `${urlPath}`);
          const [scrollWidth, clientWidth] = await page.evaluate(() =>
            [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
          assert.equal(clientWidth, width, `${urlPath} was measured in a ${width} px viewport`);
          assert.ok(scrollWidth <= clientWidth, `${urlPath} (${colorScheme}) is ${scrollWidth} px wide in a ${clientWidth} px viewport`);
          const file = `${name}-${width}-${colorScheme}.png`;
          const png = await page.screenshot(process.env.SVR_UPDATE_SCREENSHOTS ? { path: path.join(SHOTS, file) } : {});
          assert.equal(png.subarray(1, 4).toString(), 'PNG');
          assert.ok(png.length > 8000, `${file} is only ${png.length} bytes: a blank page?`);
        }
      });
    }
  }

  it('a click on a column header sorts by it, a second click reverses; directories stay first', { skip }, async () => {
    await page.setViewportSize({ width: 1200, height: 760 });
    await page.goto(`${srv.url}/downloads/`);
    const names = () => page.$$eval('tbody tr:not([data-keep]) td.n a', (links) => links.map((a) => a.textContent));
    const size = page.locator('th button').nth(1);
    await size.click();
    const up = await names();
    await size.click();
    const down = await names();
    const bySize = ['very_long_file_name_without_any_spaces_or_dashes_at_all_1234567890.tar.gz', 'README.txt',
      'svr_1.0.0_all.deb', 'annual-report-2026-final-version-approved-by-the-board.pdf'];
    const dir = 'photos-from-the-summer-trip/';
    assert.deepEqual(up, [dir, ...bySize]);
    assert.deepEqual(down, [dir, ...[...bySize].reverse()]);
  });

  it('the favicon is there: a fresh install logs no 404 for /favicon.ico', { skip }, async () => {
    const icon = await request(`${srv.url}/favicon.ico`);
    assert.equal(icon.status, 200);
    assert.match(icon.headers['content-type'], /^image\/(x-icon|vnd\.microsoft\.icon)/);
    // The access log has the line for that request (so an absent 404 line means something).
    await srv.waitForLog(/ "GET \/favicon\.ico HTTP\/1\.1" 200 /, 'stdout');
    assert.ok(!srv.stdout().some((line) => / "GET \/favicon\.ico HTTP\/1\.1" 404 /.test(line)), 'no 404 logged for the favicon');
  });

  it('the 404 page links back to the site root', { skip }, async () => {
    const page404 = await request(`${srv.url}/no-such-page`);
    assert.equal(page404.status, 404);
    assert.match(page404.text, /<a href="\/">Go to the home page<\/a>/);
  });
});
