'use strict';
// Directory listing: on/off, order, escaping, hidden entries, JSON, and a look in headless Chromium.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { request, ensureDebianPackage } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

const files = {
  'dir/b.txt': 'bb',
  'dir/A.txt': 'a',
  'dir/c.txt': 'c',
  'dir/zeta/x': '',
  'dir/Alpha/x': '',
  'dir/.env': 'SECRET',
  'dir/.hiddendir/x': '',
  'dir/serverSideScript.js': 'x',
  'dir/<b>x&y".txt': 'evil',
  'dir/a#b?c%d.txt': 'odd',
  'dir/é ü.txt': 'utf8',
  'dir/big.bin': Buffer.alloc(5000),
  'dir/file10.txt': '10', // numbers in numeric order: file2 before file10, though "1" < "2"
  'dir/file2.txt': '2',
  'empty/.keep': '',
  'withindex/index.html': 'index wins',
};

describe('directory listing enabled', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({ config: { enableDirectoryListing: true }, files });
    fs.mkdirSync(path.join(srv.dir, 'outside'));
    fs.symlinkSync(path.join(srv.dir, 'outside'), path.join(srv.root, 'dir', 'link-out'));
  });
  after(() => srv.stop());

  it('lists directories first, then files, case-insensitively, numbers in numeric order', async () => {
    const res = await request(`${srv.url}/dir/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    const names = [...res.text.matchAll(/<td class="n"><a href="[^"]*">([^<]*)<\/a>/g)].map((m) => m[1]);
    assert.deepEqual(names, [
      'Parent directory', 'Alpha/', 'zeta/',
      '&lt;b&gt;x&amp;y&quot;.txt', 'A.txt', 'a#b?c%d.txt', 'b.txt', 'big.bin', 'c.txt', 'é ü.txt', 'file2.txt', 'file10.txt',
    ]);
  });

  it('hides dotfiles, serverSideScript.js and symlinks it does not follow', async () => {
    const { text } = await request(`${srv.url}/dir/`);
    assert.ok(!text.includes('.env'));
    assert.ok(!text.includes('.hiddendir'));
    assert.ok(!text.includes('serverSideScript.js'));
    assert.ok(!text.includes('link-out'));
  });

  it('HTML-escapes names and URL-encodes hrefs', async () => {
    const { text } = await request(`${srv.url}/dir/`);
    assert.ok(!text.includes('<b>x'));
    assert.ok(text.includes('href="/dir/%3Cb%3Ex&amp;y%22.txt"'));
    assert.ok(text.includes('href="/dir/a%23b%3Fc%25d.txt"'));
    assert.ok(text.includes('href="/dir/%C3%A9%20%C3%BC.txt"'));
    const odd = await request(`${srv.url}/dir/a%23b%3Fc%25d.txt`);
    assert.equal(odd.text, 'odd');
  });

  it('shows sizes and modification times, and a parent link', async () => {
    const { text } = await request(`${srv.url}/dir/`);
    assert.match(text, /big\.bin<\/a><\/td><td class="s" data-v="5000">4\.9 KiB<\/td><td class="m" data-v="\d+">\d{4}-\d\d-\d\d \d\d:\d\d<\/td>/);
    assert.ok(text.includes('<a href="/">Parent directory</a>'));
  });

  it('never shows an absolute server path', async () => {
    const html = await request(`${srv.url}/dir/`);
    const json = await request(`${srv.url}/dir/`, { headers: { Accept: 'application/json' } });
    for (const body of [html.text, json.text]) {
      assert.ok(!body.includes(srv.root));
      assert.ok(!body.includes(srv.dir));
    }
  });

  it('answers JSON when Accept asks for it', async () => {
    const res = await request(`${srv.url}/dir/`, { headers: { Accept: 'application/json' } });
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    const data = JSON.parse(res.text);
    assert.equal(data.path, '/dir/');
    assert.equal(data.parent, '/');
    assert.deepEqual(data.entries.slice(0, 2).map((e) => [e.name, e.type]), [['Alpha', 'directory'], ['zeta', 'directory']]);
    const big = data.entries.find((e) => e.name === 'big.bin');
    assert.equal(big.size, 5000);
    assert.equal(big.href, '/dir/big.bin');
    assert.ok(!Number.isNaN(Date.parse(big.modified)));
    assert.equal(data.truncated, 0);
  });

  it('lists the root without a parent link, and says when a directory is empty', async () => {
    const root = await request(`${srv.url}/`);
    assert.equal(root.status, 200);
    assert.ok(!root.text.includes('Parent directory'));
    const empty = await request(`${srv.url}/empty/`);
    assert.ok(empty.text.includes('This directory is empty.'));
  });

  it('an index file wins over the listing', async () => {
    assert.equal((await request(`${srv.url}/withindex/`)).text, 'index wins');
  });
});

describe('directory listing disabled (default)', () => {
  let srv;
  before(async () => { srv = await startPipeline({ files }); });
  after(() => srv.stop());

  it('answers 403 for a directory without index', async () => {
    const res = await request(`${srv.url}/dir/`);
    assert.equal(res.status, 403);
    assert.ok(!res.text.includes('b.txt'));
  });
});

// Resolves with { status, stderr } when the command exits.
function run(command, args, options) {
  return new Promise((resolve) => {
    execFile(command, args, { encoding: 'utf8', ...options }, (error, stdout, stderr) => {
      resolve({ status: error ? (error.code ?? error.signal) : 0, stderr });
    });
  });
}

describe('directory listing in headless Chromium', () => {
  const browser = ensureDebianPackage('chromium');
  const chromium = browser.path;
  let srv;
  before(async () => {
    if (chromium) srv = await startPipeline({ config: { enableDirectoryListing: true }, files });
  });
  after(() => srv && srv.stop());

  it('renders a page with a non-blank screenshot', { skip: browser.skip ?? false }, async () => {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-chromium-'));
    const shot = process.env.SVR_LISTING_SCREENSHOT || path.join(profile, 'listing.png');
    // Asynchronous: the server answering Chromium runs in this process.
    const result = await run(chromium, [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--user-data-dir=${profile}`, `--screenshot=${shot}`, '--window-size=1024,768', `${srv.url}/dir/`,
    ], { timeout: 60000 });
    try {
      assert.equal(result.status, 0, result.stderr);
      const png = fs.readFileSync(shot);
      assert.equal(png.subarray(1, 4).toString(), 'PNG');
      assert.ok(png.length > 10000, `screenshot is only ${png.length} bytes: a blank page?`);
      // the browser really fetched the listing
      await srv.waitForLog(/"GET \/dir\/ HTTP\/1\.1" 200/, 'stdout');
    } finally {
      if (!process.env.SVR_LISTING_SCREENSHOT) fs.rmSync(profile, { recursive: true, force: true });
    }
  });
});
