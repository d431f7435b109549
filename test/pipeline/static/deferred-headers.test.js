'use strict';
// lib/http/response.js: the site's fixed headers (Server, customHeaders) wait on svr's HTTP/1 and
// HTTP/2 responses, and the static stage folds them into the header object it answers with, so
// that Node writes the head straight from that object. What scripts, mods and other stages see is what
// they saw when the headers were set first.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { startPipeline } = require('../../support/pipeline');
const { request } = require('../../support/helpers');
const { SvrResponse, deferHeaders, takeDeferred } = require('../../../lib/http/response');

// Counts setHeader calls on prototype `proto` by the responses `counts` accepts while fn runs.
async function countingCalls(proto, counts, fn) {
  const original = proto.setHeader;
  let calls = 0;
  proto.setHeader = function counted(...args) {
    if (counts(this)) calls++;
    return original.apply(this, args);
  };
  try {
    await fn();
  } finally {
    proto.setHeader = original;
  }
  return calls;
}

// HTTP/1: Node's writeHead merges a header object through setHeader once any header was set
// before it. Only server responses count, not the client's own requests.
const countingSetHeader = (fn) => countingCalls(http.OutgoingMessage.prototype, (res) => res instanceof http.ServerResponse, fn);

const CUSTOM = { 'X-Frame-Options': 'DENY', vary: 'Origin', 'x-content-type-options': 'nosniff' };

test('a static 200, HEAD and 304 are written from one header object: no setHeader, the same fields', async (t) => {
  const site = await startPipeline({ config: { customHeaders: CUSTOM }, files: { 'page.html': '<p>hello</p>'.repeat(100) }, env: { SVR_FILE_CACHE_SETTLE_MS: '0' } });
  t.after(site.stop);
  const first = await request(`${site.url}/page.html`); // reads the file into the cache
  let ok;
  let head;
  let notModified;
  const calls = await countingSetHeader(async () => {
    ok = await request(`${site.url}/page.html`);
    head = await request(`${site.url}/page.html`, { method: 'HEAD' });
    notModified = await request(`${site.url}/page.html`, { headers: { 'If-None-Match': first.headers.etag } });
  });
  assert.equal(calls, 0);
  for (const res of [first, ok, head]) {
    assert.equal(res.status, 200);
    assert.equal(res.headers.server, 'svr');
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.equal(res.headers.vary, 'Origin, Accept-Encoding'); // the site's Vary, then the file's
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['content-length'], String(1200));
  }
  assert.equal(ok.text, '<p>hello</p>'.repeat(100));
  assert.equal(notModified.status, 304);
  assert.equal(notModified.headers.server, 'svr');
  assert.equal(notModified.headers['x-frame-options'], 'DENY');
  assert.equal(notModified.headers.vary, 'Origin, Accept-Encoding');
  assert.equal(notModified.headers.etag, first.headers.etag);
  // The head is not kept field by field: the access log still has the body's length.
  await site.waitForLog(/"HEAD \/page\.html HTTP\/1\.1" 200 0 /, 'stdout');
  assert.ok(site.stdout().some((line) => / "GET \/page\.html HTTP\/1\.1" 200 1200 /.test(line)), site.stdout().join('\n'));
});

// A site where later stages set headers over the fixed ones: a per-host header, an error page, and
// a script that reads the fixed headers and removes one.
const LATER_STAGES = {
  config: {
    customHeaders: { 'X-Frame-Options': 'DENY', 'X-Who': 'site' },
    customHeadersVHost: [{ host: 'vhost.test', headers: { 'X-Who': 'vhost' } }],
  },
  files: {
    'page.html': 'hi',
    'serverSideScript.js': `
      if (req.url === '/script') {
        disableEndElseCallbackExecute = true;
        const seen = [res.getHeader('server'), res.getHeader('x-frame-options')].join(',');
        res.removeHeader('X-Frame-Options');
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end(seen);
      }`,
  },
};

// get(path, host) -> { status, headers, text } from LATER_STAGES' site.
async function checkLaterStages(get) {
  const vhost = await get('/page.html', 'vhost.test');
  assert.equal(vhost.headers['x-who'], 'vhost');
  assert.equal(vhost.headers['x-frame-options'], 'DENY');
  const missing = await get('/nowhere');
  assert.equal(missing.status, 404);
  assert.equal(missing.headers.server, 'svr');
  assert.equal(missing.headers['x-who'], 'site');
  const script = await get('/script');
  assert.equal(script.text, 'svr,DENY'); // the script saw them before it wrote anything
  assert.equal(script.headers['x-frame-options'], undefined); // and its removal stands
  assert.equal(script.headers.server, 'svr');
}

test('a header a later stage sets replaces the fixed one; an error page and a script still get them', async (t) => {
  const site = await startPipeline(LATER_STAGES);
  t.after(site.stop);
  await checkLaterStages((urlPath, host) => request(`${site.url}${urlPath}`, { headers: host ? { Host: host } : {} }));
});

test('SvrResponse: waiting headers are set on the first read or write, under what was set since', async (t) => {
  const fixed = [['Server', 'svr'], ['X-A', 'fixed']];
  const seen = {};
  const server = http.createServer({ ServerResponse: SvrResponse }, (req, res) => {
    assert.equal(deferHeaders(res, fixed), true);
    if (req.url === '/take') {
      seen.take = takeDeferred(res, fixed);
      return res.writeHead(200, { Server: 'svr', 'X-A': 'fixed', 'X-B': 'own' }).end();
    }
    if (req.url === '/set-then-take') {
      res.setHeader('X-A', 'later');
      seen.setThenTake = takeDeferred(res, fixed);
      return res.end('x'); // the implicit head sets the waiting ones first
    }
    if (req.url === '/append') {
      res.appendHeader('X-A', 'more');
      return res.end('x');
    }
    seen.read = res.getHeader('x-a');
    res.removeHeader('Server');
    return res.end('x');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const url = `http://127.0.0.1:${server.address().port}`;
  const take = await request(`${url}/take`);
  assert.equal(seen.take, true);
  assert.deepEqual([take.headers.server, take.headers['x-a'], take.headers['x-b']], ['svr', 'fixed', 'own']);
  const setThenTake = await request(`${url}/set-then-take`);
  assert.equal(seen.setThenTake, false); // something else was set: writeHead merges as usual
  assert.deepEqual([setThenTake.headers.server, setThenTake.headers['x-a']], ['svr', 'later']);
  const read = await request(`${url}/read`);
  assert.equal(seen.read, 'fixed');
  assert.equal(read.headers.server, undefined);
  assert.equal(read.headers['x-a'], 'fixed');
  const appended = await request(`${url}/append`);
  assert.equal(appended.headers['x-a'], 'fixed, more');
  // Not an SvrResponse (HTTP/2, a response made for an upgraded socket): nothing waits.
  assert.equal(deferHeaders({}, fixed), false);
});

// HTTP/2: Node's writeHead merges its object without setHeader; only a header set on the
// response, the fixed ones included, calls it.
const countingHttp2SetHeader = (fn) => countingCalls(require('node:http2').Http2ServerResponse.prototype, () => true, fn);

test('HTTPS and HTTP/2 take the same path: the fixed headers folded into the head, none set one by one', async (t) => {
  const { startTlsPipeline, httpsRequest, h2Connect, h2Request } = require('../../support/tls-helpers');
  const site = await startTlsPipeline({
    config: { enableHTTP2: true, customHeaders: CUSTOM },
    files: { 'page.html': '<p>hello</p>'.repeat(100) },
    env: { SVR_FILE_CACHE_SETTLE_MS: '0' },
  });
  t.after(site.stop);
  await httpsRequest(`${site.httpsUrl}/page.html`);
  let https;
  const calls = await countingSetHeader(async () => { https = await httpsRequest(`${site.httpsUrl}/page.html`); });
  assert.equal(calls, 0);
  assert.equal(https.status, 200);
  assert.equal(https.headers['x-frame-options'], 'DENY');
  assert.equal(https.headers.server, 'svr');
  const session = h2Connect(site.httpsUrl);
  t.after(() => session.close());
  const first = await h2Request(site.httpsUrl, '/page.html', { session });
  const answers = {};
  const h2Calls = await countingHttp2SetHeader(async () => {
    answers.ok = await h2Request(site.httpsUrl, '/page.html', { session });
    answers.head = await h2Request(site.httpsUrl, '/page.html', { session, method: 'HEAD' });
    answers.notModified = await h2Request(site.httpsUrl, '/page.html', { session, headers: { 'if-none-match': first.headers.etag } });
    answers.range = await h2Request(site.httpsUrl, '/page.html', { session, headers: { range: 'bytes=0-2' } });
  });
  assert.equal(h2Calls, 0);
  assert.equal(first.alpn, 'h2');
  for (const name of ['ok', 'head', 'notModified', 'range']) {
    const { headers } = answers[name];
    assert.equal(headers.server, 'svr', name);
    assert.equal(headers['x-frame-options'], 'DENY', name);
    assert.equal(headers.vary, 'Origin, Accept-Encoding', name); // the site's Vary, then the file's
    assert.equal(headers['x-content-type-options'], 'nosniff', name);
  }
  assert.deepEqual([answers.ok.status, answers.head.status, answers.notModified.status, answers.range.status], [200, 200, 304, 206]);
  assert.equal(answers.ok.text, '<p>hello</p>'.repeat(100));
  assert.equal(answers.head.headers['content-length'], '1200');
  assert.equal(answers.head.body.length, 0);
  assert.equal(answers.notModified.body.length, 0);
  assert.equal(answers.range.text, '<p>');
  assert.equal(answers.range.headers['content-range'], 'bytes 0-2/1200');
  // The access log has each body's length, though no Content-Length was set on the response.
  await site.waitForLog(/"GET \/page\.html HTTP\/2\.0" 206 3 /, 'stdout');
  const lines = site.stdout().filter((line) => / HTTP\/2\.0" /.test(line));
  assert.ok(lines.some((line) => /"GET \/page\.html HTTP\/2\.0" 200 1200 /.test(line)), lines.join('\n'));
  assert.ok(lines.some((line) => /"HEAD \/page\.html HTTP\/2\.0" 200 0 /.test(line)), lines.join('\n'));
  assert.ok(lines.some((line) => /"GET \/page\.html HTTP\/2\.0" 304 0 /.test(line)), lines.join('\n'));
});

test('HTTP/2: a header a later stage sets replaces the fixed one; an error page and a script still get them', async (t) => {
  const { startTlsPipeline, h2Request } = require('../../support/tls-helpers');
  const site = await startTlsPipeline({ ...LATER_STAGES, config: { ...LATER_STAGES.config, enableHTTP2: true } });
  t.after(site.stop);
  await checkLaterStages(async (urlPath, host) => {
    const answer = await h2Request(site.httpsUrl, urlPath, { headers: host ? { ':authority': host } : {} });
    assert.equal(answer.alpn, 'h2');
    return answer;
  });
});
