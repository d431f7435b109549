'use strict';
// Stage 2: the rewrite map (SVR.JS format): the pipeline in-process on real sockets. The
// customHeaders' {path} placeholder shows the URL after rewriting.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { request } = require('../support/helpers');
const { startPipeline } = require('../support/pipeline');

const rewriteMap = [
  { definingRegex: '/^\\/first$/', replacements: [{ regex: '/.*/', replacement: '/one.txt' }] },
  { definingRegex: '/^\\/first$/', replacements: [{ regex: '/.*/', replacement: '/two.txt' }] },
  { definingRegex: '/^\\/chain$/', replacements: [{ regex: '/chain/', replacement: 'first' }] },
  { definingRegex: '/^\\/user\\/(\\w+)$/', replacements: [{ regex: '/^\\/user\\/(\\w+)$/', replacement: '/users/$1.txt' }], append: '?from=map' },
  { definingRegex: '/^\\/hosted$/', host: 'example.com', replacements: [{ regex: '/.*/', replacement: '/one.txt' }] },
  { definingRegex: '/^\\/wild$/', host: '*.example.org', replacements: [{ regex: '/.*/', replacement: '/two.txt' }] },
  { definingRegex: '/^\\/escape/', replacements: [{ regex: '/^\\/escape/', replacement: '/../secret' }] },
  { definingRegex: '/^\\/encescape/', replacements: [{ regex: '/^\\/encescape/', replacement: '/%2e%2e/secret' }] },
  { definingRegex: '/^\\/dots/', replacements: [{ regex: '/^\\/dots/', replacement: '/a/../users/./x.txt' }] },
  { definingRegex: '/^\\/pretty(?:\\?|$)/', replacements: [{ regex: '/^\\/pretty/', replacement: '/app/dir' }] },
  { definingRegex: '/^\\/app\\//', isNotFile: true, isNotDirectory: true, replacements: [{ regex: '/^\\/app\\/.*/', replacement: '/app/index.html' }] },
];

describe('rewriteMap', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({
      config: { rewriteMap, customHeaders: { 'X-Path': '{path}' } },
      files: {
        'one.txt': 'one', 'two.txt': 'two', 'first': 'unrewritten', 'users/ann.txt': 'ann', 'users/x.txt': 'x',
        'app/index.html': 'spa', 'app/real.txt': 'real file', 'app/dir/index.html': 'real dir',
      },
    });
    fs.mkdirSync(path.join(srv.dir, 'secret'));
    fs.writeFileSync(path.join(srv.dir, 'secret', 'passwd'), 'TOP SECRET');
  });
  after(() => srv.stop());

  it('applies the first matching entry only', async () => {
    const res = await request(`${srv.url}/first`);
    assert.equal(res.text, 'one');
    assert.equal(res.headers['x-path'], '/one.txt');
  });

  it('rewrites at most once (no chaining)', async () => {
    const res = await request(`${srv.url}/chain`);
    assert.equal(res.text, 'unrewritten');
    assert.equal(res.headers['x-path'], '/first');
  });

  it('substitutes capture groups and appends', async () => {
    const res = await request(`${srv.url}/user/ann`);
    assert.equal(res.text, 'ann');
    assert.equal(res.headers['x-path'], '/users/ann.txt?from=map');
  });

  it('matches an exact host only for that host', async () => {
    const hit = await request(`${srv.url}/hosted`, { headers: { Host: 'example.com' } });
    assert.equal(hit.text, 'one');
    const port = await request(`${srv.url}/hosted`, { headers: { Host: 'EXAMPLE.com:8080' } });
    assert.equal(port.text, 'one');
    const miss = await request(`${srv.url}/hosted`, { headers: { Host: 'other.com' } });
    assert.equal(miss.status, 404);
  });

  it('matches a *.domain host for subdomains and the bare domain', async () => {
    assert.equal((await request(`${srv.url}/wild`, { headers: { Host: 'a.example.org' } })).text, 'two');
    assert.equal((await request(`${srv.url}/wild`, { headers: { Host: 'example.org' } })).text, 'two');
    assert.equal((await request(`${srv.url}/wild`, { headers: { Host: 'badexample.org' } })).status, 404);
  });

  it('refuses a rewrite that escapes the root with 403', async () => {
    for (const p of ['/escape/passwd', '/encescape/passwd']) {
      const res = await request(srv.url + p);
      assert.equal(res.status, 403, p);
      assert.ok(!res.text.includes('TOP SECRET'));
    }
  });

  it('normalises dot segments inside the root silently', async () => {
    const res = await request(`${srv.url}/dots`);
    assert.equal(res.status, 200);
    assert.equal(res.text, 'x');
  });

  it('isNotFile: an existing file is not rewritten', async () => {
    assert.equal((await request(`${srv.url}/app/real.txt`)).text, 'real file');
  });

  it('isNotDirectory: an existing directory is not rewritten', async () => {
    assert.equal((await request(`${srv.url}/app/dir/`)).text, 'real dir');
  });

  it('a path that is neither is rewritten', async () => {
    const res = await request(`${srv.url}/app/some/route`);
    assert.equal(res.text, 'spa');
    assert.equal(res.headers['x-path'], '/app/index.html');
  });
});

describe('rewriteMap: a directory reached through a rewrite', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({ config: { rewriteMap }, files: { 'app/dir/index.html': 'real dir' } });
  });
  after(() => srv.stop());

  it('is redirected to the URL the client sent plus "/", query kept, not to the internal path', async () => {
    const res = await request(`${srv.url}/pretty?x=1`);
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/pretty/?x=1');
    // the same directory asked for by its own path: redirected to that path
    assert.equal((await request(`${srv.url}/app/dir`)).headers.location, '/app/dir/');
  });
});

describe('rewriteMap validation', () => {
  it('an invalid regex stops the server at start with the key path', async () => {
    await assert.rejects(
      startPipeline({ config: { rewriteMap: [{ definingRegex: '/a(/', replacements: [] }] } }),
      /rewriteMap\[0\]\.definingRegex/,
    );
  });

  it('a string that is not /pattern/flags is refused', async () => {
    await assert.rejects(
      startPipeline({ config: { rewriteMap: [{ definingRegex: '/ok/', replacements: [{ regex: 'nope', replacement: '' }] }] } }),
      /rewriteMap\[0\]\.replacements\[0\]\.regex/,
    );
  });
});
