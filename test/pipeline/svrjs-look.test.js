'use strict';
// An SVR.JS site keeps its look and its forms: an SVR.JS config (one with a key svr accepts only
// from SVR.JS, here "timestamp") that does not set them gets SVR.JS's behaviour for
// enableIncludingHeadAndFootInHTML (head and foot around every page and custom error page) and
// allowPostToStaticFiles (POST to a file answered as GET); an svr config keeps svr's (no wrapping,
// 405), also when it uses SVR.JS's access keys.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { startPipeline } = require('../support/pipeline');
const { request } = require('../support/helpers');
const { loadConfig } = require('../../lib/config/load');

const FILES = {
  'head.html': '<div>HEAD</div>',
  'foot.html': '<div>FOOT</div>',
  'index.html': '<p>home</p>',
  'page.html': '<p>plain page</p>',
  'form.txt': 'text',
  '404.html': '<p>custom 404 at {path}</p>',
  '403.html': '<p>custom 403</p>',
};
const SVRJS_MARKER = { timestamp: 1700000000000 };
const wrapped = (body) => `<div>HEAD</div>${body}<div>FOOT</div>`;

describe('an SVR.JS config without the keys: SVR.JS\'s look and forms', () => {
  let site;
  before(async () => {
    site = await startPipeline({ config: { ...SVRJS_MARKER, nonStandardCodes: [{ url: '/private', scode: 403 }] }, files: FILES });
  });
  after(() => site.stop());

  it('says so when the config is read', () => {
    const { warnings } = loadConfig(site.configFile);
    const line = warnings.find((w) => w.includes('an SVR.JS config'));
    assert.match(line || '', /: an SVR\.JS config \(it has "timestamp"\): as SVR\.JS did, allowPostToStaticFiles is true \(svr's default: false\), enableIncludingHeadAndFootInHTML is true \(svr's default: false\)/);
  });

  it('pages get the web root\'s head and foot', async () => {
    const page = await request(`${site.url}/page.html`);
    assert.equal(page.status, 200);
    assert.equal(page.text, wrapped('<p>plain page</p>'));
  });

  it('custom error pages get them too; svr\'s own pages and JSON errors do not', async () => {
    const missing = await request(`${site.url}/missing`);
    assert.equal(missing.status, 404);
    assert.equal(missing.text, wrapped('<p>custom 404 at /missing</p>'));
    const forbidden = await request(`${site.url}/private`);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.text, wrapped('<p>custom 403</p>'));
    const json = await request(`${site.url}/missing`, { headers: { Accept: 'application/json' } });
    assert.doesNotMatch(json.text, /HEAD|FOOT/);
    const builtin = await request(`${site.url}/page.html`, { method: 'DELETE' }); // 405: no custom page
    assert.equal(builtin.status, 405);
    assert.doesNotMatch(builtin.text, /<div>HEAD<\/div>/);
  });

  it('POST to a file or a directory is answered as GET (a form posting to a page)', async () => {
    const page = await request(`${site.url}/page.html`, { method: 'POST', body: 'name=x', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    assert.equal(page.status, 200);
    assert.equal(page.text, wrapped('<p>plain page</p>'));
    const index = await request(`${site.url}/`, { method: 'POST', body: 'a=1' });
    assert.equal(index.status, 200);
    assert.equal(index.text, wrapped('<p>home</p>'));
    const text = await request(`${site.url}/form.txt`, { method: 'POST', body: 'a=1' });
    assert.equal(text.text, 'text');
    const options = await request(`${site.url}/page.html`, { method: 'OPTIONS' });
    assert.equal(options.headers.allow, 'GET, POST, HEAD, OPTIONS');
    // The unread body does not end up in the next request on the same connection.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const posted = await request(`${site.url}/form.txt`, { method: 'POST', body: 'x'.repeat(100000), agent });
      const next = await request(`${site.url}/page.html`, { agent });
      assert.equal(posted.text, 'text');
      assert.equal(next.status, 200);
      assert.equal(next.text, wrapped('<p>plain page</p>'));
    } finally {
      agent.destroy();
    }
    const put = await request(`${site.url}/page.html`, { method: 'PUT', body: 'x' });
    assert.equal(put.status, 405);
    assert.equal(put.headers.allow, 'GET, POST, HEAD, OPTIONS');
  });
});

describe('an svr config: svr\'s defaults, even with SVR.JS\'s access keys', () => {
  let site;
  before(async () => {
    site = await startPipeline({ config: { blacklist: [], nonStandardCodes: [], allowStatus: false }, files: FILES });
  });
  after(() => site.stop());

  it('no SVR.JS note, pages as they are, POST 405', async () => {
    assert.ok(!loadConfig(site.configFile).warnings.some((w) => w.includes('an SVR.JS config')));
    assert.equal((await request(`${site.url}/page.html`)).text, '<p>plain page</p>');
    const post = await request(`${site.url}/page.html`, { method: 'POST', body: 'a=1' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD, OPTIONS');
    assert.equal((await request(`${site.url}/missing`)).text, '<p>custom 404 at /missing</p>');
  });
});

describe('the keys set in the config win', () => {
  it('an SVR.JS config that sets them false gets svr\'s behaviour', async () => {
    const site = await startPipeline({ config: { ...SVRJS_MARKER, enableIncludingHeadAndFootInHTML: false, allowPostToStaticFiles: false }, files: FILES });
    try {
      assert.ok(!loadConfig(site.configFile).warnings.some((w) => w.includes('an SVR.JS config')));
      assert.equal((await request(`${site.url}/page.html`)).text, '<p>plain page</p>');
      assert.equal((await request(`${site.url}/page.html`, { method: 'POST', body: 'a=1' })).status, 405);
    } finally {
      await site.stop();
    }
  });

  it('an svr config with enableIncludingHeadAndFootInHTML wraps its custom error pages (errorPages, page404)', async () => {
    const site = await startPipeline({
      config: { enableIncludingHeadAndFootInHTML: true, errorPages: [{ scode: 403, path: 'errors/forbidden.html' }], nonStandardCodes: [{ url: '/private', scode: 403 }] },
      files: { ...FILES, 'errors/forbidden.html': '<p>no entry</p>' },
    });
    try {
      assert.equal((await request(`${site.url}/private`)).text, wrapped('<p>no entry</p>'));
      assert.equal((await request(`${site.url}/missing`)).text, wrapped('<p>custom 404 at /missing</p>'));
      assert.equal((await request(`${site.url}/page.html`, { method: 'POST', body: 'a=1' })).status, 405, 'POST stays 405');
    } finally {
      await site.stop();
    }
  });
});
