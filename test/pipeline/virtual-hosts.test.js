'use strict';
// Virtual hosts as SVR.JS 4.4+ (wwwrootVHost, enableDirectoryListingVHost, customHeadersVHost):
// two hosts with their own roots, error pages and listings, one pipeline.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startPipeline } = require('../support/pipeline');
const { request } = require('../support/helpers');

const as = (host) => ({ headers: { host } });

describe('virtual hosts', () => {
  let site;
  before(async () => {
    site = await startPipeline({
      config: {
        wwwrootVHost: [{ host: 'a.example', wwwroot: 'a' }, { host: '*.b.example', wwwroot: 'b' }],
        enableDirectoryListingVHost: [{ host: '*.b.example', enabled: true }],
        customHeadersVHost: [{ host: 'a.example', headers: { 'X-Site': 'a', 'X-Path': 'a:{path}' } }],
        customHeaders: { 'X-Site': 'default', 'X-Frame-Options': 'DENY' },
        rewriteMap: [{ definingRegex: '/^\\/spa\\//', isNotFile: true, replacements: [{ regex: '/.*/', replacement: '/index.html' }] }],
        errorPages: [{ scode: 404, path: 'missing.html' }],
      },
      files: {
        'index.html': 'default site',
        'only-default.txt': 'default only',
        'missing.html': 'default 404 page',
        '../a/index.html': 'site a',
        '../a/missing.html': 'a 404 page',
        '../a/docs/x.txt': 'x',
        '../a/spa/real.txt': 'a real file',
        '../b/index.html': 'site b',
        '../b/docs/y.txt': 'y',
        '../b/missing.html': 'b 404 page',
        'serverSideScript.js': "if (req.url === '/who') { res.writeHead(200); res.end('default script'); } else elseCallback();",
        '../a/serverSideScript.js': "if (req.url === '/who') { res.writeHead(200); res.end('a script'); } " +
          "else if (req.url === '/host') { res.writeHead(200); res.end(req.headers.host); } else elseCallback();",
      },
    });
  });
  after(() => site.stop());

  it('serves each host from its own root; other hosts from wwwroot', async () => {
    assert.equal((await request(`${site.url}/`, as('a.example'))).text, 'site a');
    assert.equal((await request(`${site.url}/`, as('www.b.example'))).text, 'site b');
    assert.equal((await request(`${site.url}/`, as('b.example'))).text, 'site b', '*.b.example matches b.example too');
    assert.equal((await request(`${site.url}/`, as('other.example'))).text, 'default site');
    assert.equal((await request(`${site.url}/only-default.txt`, as('a.example'))).status, 404, 'a host sees only its own root');
  });

  it('the rewrite map\'s isNotFile looks in the request\'s own root', async () => {
    assert.equal((await request(`${site.url}/spa/real.txt`, as('a.example'))).text, 'a real file');
    assert.equal((await request(`${site.url}/spa/real.txt`, as('c.example'))).text, 'default site');
  });

  it('serverSideScript.js comes from the request\'s own root (none in b\'s: static files there)', async () => {
    assert.equal((await request(`${site.url}/who`, as('a.example'))).text, 'a script');
    assert.equal((await request(`${site.url}/who`, as('c.example'))).text, 'default script');
    assert.equal((await request(`${site.url}/who`, as('b.example'))).status, 404);
  });

  it('error pages come from the request\'s own root', async () => {
    const a = await request(`${site.url}/nope`, as('a.example'));
    assert.equal(a.status, 404);
    assert.equal(a.text, 'a 404 page');
    assert.equal((await request(`${site.url}/nope`, as('b.example'))).text, 'b 404 page');
    assert.equal((await request(`${site.url}/nope`, as('c.example'))).text, 'default 404 page');
  });

  it('listings per host: on for *.b.example, off (403) elsewhere', async () => {
    const b = await request(`${site.url}/docs/`, as('b.example'));
    assert.equal(b.status, 200);
    assert.match(b.text, /y\.txt/);
    assert.equal((await request(`${site.url}/docs/`, as('a.example'))).status, 403);
  });

  it('an absolute-form target\'s authority is the host, whatever Host says; over HTTP/1.0 without Host too', async () => {
    const absolute = (target, host) => request(site.url, { path: target, headers: { host } });
    const a = await absolute('http://a.example/', 'b.example');
    assert.deepEqual([a.text, a.headers['x-site']], ['site a', 'a'], 'a\'s root and customHeadersVHost');
    assert.equal((await absolute('http://A.Example:8080/nope', 'b.example')).text, 'a 404 page');
    assert.equal((await absolute('http://a.example/host', 'c.example')).text, 'a.example', 'a\'s script, told the host as Host');
    assert.equal((await absolute('http://c.example/', 'a.example')).text, 'default site');
    const socket = net.connect(site.port, '127.0.0.1');
    socket.write('GET http://www.b.example/ HTTP/1.0\r\n\r\n'); // no keep-alive: svr closes after the answer
    const chunks = [];
    for await (const chunk of socket) chunks.push(chunk);
    assert.match(Buffer.concat(chunks).toString(), /^HTTP\/1\.1 200 [^]*\r\n\r\nsite b$/);
  });

  it('every root shares the worker\'s one file cache (fileCacheMaxBytes bounds the worker)', () => {
    assert.ok(site.pipeline.site.shared.fileCache, 'the cache lives on the shared record');
  });

  it('customHeadersVHost: the host\'s headers over customHeaders, {path} filled', async () => {
    const a = await request(`${site.url}/docs/x.txt`, as('a.example'));
    assert.equal(a.headers['x-site'], 'a');
    assert.equal(a.headers['x-path'], 'a:/docs/x.txt');
    assert.equal(a.headers['x-frame-options'], 'DENY');
    assert.equal((await request(`${site.url}/`, as('b.example'))).headers['x-site'], 'default');
  });
});

describe('web-root postfixes (wwwrootPostfixesVHost)', () => {
  let site;
  before(async () => {
    site = await startPipeline({
      config: {
        wwwrootPostfixesVHost: [{ host: 'a.example', postfix: 'hosts/a', skipRegex: '/^\\/shared\\//' }],
        wwwrootPostfixPrefixesVHost: ['/cgi-bin'],
        rewriteMap: [{ definingRegex: '/^\\/hosts\\/a\\/old$/', replacements: [{ regex: '/old$/', replacement: 'new.txt' }] }],
      },
      files: {
        'index.html': 'main', 'hosts/a/index.html': 'host a', 'hosts/a/new.txt': 'rewritten after the postfix',
        'cgi-bin/hosts/a/run.txt': 'cgi for a', 'shared/x.txt': 'shared',
      },
    });
  });
  after(() => site.stop());

  it('serves a host from its subdirectory; others from the root', async () => {
    assert.equal((await request(`${site.url}/`, as('a.example'))).text, 'host a');
    assert.equal((await request(`${site.url}/`, as('b.example'))).text, 'main');
  });

  it('keeps a listed prefix in front, honours skipRegex, and runs before the rewrite map', async () => {
    assert.equal((await request(`${site.url}/cgi-bin/run.txt`, as('a.example'))).text, 'cgi for a');
    assert.equal((await request(`${site.url}/shared/x.txt`, as('a.example'))).text, 'shared');
    assert.equal((await request(`${site.url}/old`, as('a.example'))).text, 'rewritten after the postfix');
  });
});
