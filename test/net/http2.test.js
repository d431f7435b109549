'use strict';
// HTTP/2 (enableHTTP2): the same site over h2 and over HTTP/1.1 on the same port, with Node's
// http2 client and curl --http2. In-process: the pipeline behind the listeners a worker builds
// (lib/net's HTTP/2 server with its TLS context; support/pipeline.js, asWorker).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { promisify } = require('node:util');
const { startTlsPipeline, httpsRequest, h2Request, h2Connect, curl } = require('../support/tls-helpers');
const { ensureDebianPackage } = require('../support/helpers');

const execFileAsync = promisify(execFile);

const FILE = 'abcdefghijklmnopqrstuvwxyz0123456789\n';

let server;
test.before(async () => {
  server = await startTlsPipeline({ config: { enableHTTP2: true, workers: 2 }, files: { 'index.html': 'hello over h2\n', 'dir/file.txt': FILE } });
});
test.after(async () => {
  if (server) await server.stop();
});

test('h2: a static file, negotiated by ALPN, in the access log as HTTP/2.0 with the client address', async () => {
  const res = await h2Request(server.httpsUrl, '/dir/file.txt', { headers: { 'user-agent': 'h2-test' } });
  assert.equal(res.alpn, 'h2');
  assert.equal(res.status, 200);
  assert.equal(res.text, FILE);
  assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  assert.equal(res.headers['content-length'], String(FILE.length));
  const line = await server.waitForLog(/"GET \/dir\/file.txt HTTP\/2.0" 200 .*"h2-test"/, 'stdout');
  assert.match(line, /^127\.0\.0\.1 - - \[/);
  assert.match(line, new RegExp(`" 200 ${FILE.length} `));
});

test('h2: several streams on one session', async () => {
  const session = h2Connect(server.httpsUrl);
  try {
    const all = await Promise.all(Array.from({ length: 20 }, (_, i) => h2Request(server.httpsUrl, i % 2 ? '/' : '/dir/file.txt', { session })));
    assert.deepEqual(all.map((r) => r.status), Array(20).fill(200));
    assert.equal(all[0].text, FILE);
    assert.equal(all[1].text, 'hello over h2\n');
  } finally {
    session.close();
  }
});

test('h2: a range request gets 206 and the bytes asked for', async () => {
  const res = await h2Request(server.httpsUrl, '/dir/file.txt', { headers: { range: 'bytes=3-9' } });
  assert.equal(res.status, 206);
  assert.equal(res.text, FILE.slice(3, 10));
  assert.equal(res.headers['content-range'], `bytes 3-9/${FILE.length}`);
});

test('h2: HEAD has headers and no body; a missing file is a 404', async () => {
  const head = await h2Request(server.httpsUrl, '/dir/file.txt', { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
  const missing = await h2Request(server.httpsUrl, '/nope.txt');
  assert.equal(missing.status, 404);
});

test('h2 port still speaks HTTP/1.1 to clients that do not offer h2', async () => {
  const res = await httpsRequest(`${server.httpsUrl}/dir/file.txt`);
  assert.equal(res.httpVersion, '1.1');
  assert.equal(res.status, 200);
  assert.equal(res.text, FILE);
  const curled = await curl(['--insecure', '--http1.1', '--write-out', '%{http_version}', '--output', '/dev/null', `${server.httpsUrl}/`]);
  assert.equal(curled.stdout.toString(), '1.1');
});

test('curl --http2 gets the file over HTTP/2, verifying the generated certificate for localhost', async () => {
  const cacert = path.join(server.stateDir, 'selfsigned-cert.pem');
  assert.ok(fs.existsSync(cacert));
  const out = path.join(server.dir, 'curl-out.txt');
  const res = await curl(['--http2', '--cacert', cacert, '--write-out', '%{http_version} %{http_code}', '--output', out, `${server.httpsUrl}/dir/file.txt`]);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.stdout.toString(), '2 200');
  assert.equal(fs.readFileSync(out, 'utf8'), FILE);
  const range = await curl(['--http2', '--cacert', cacert, '--range', '0-4', `${server.httpsUrl}/dir/file.txt`]);
  assert.equal(range.stdout.toString(), 'abcde');
});

// The idle time counts from the last stream's end: a session in use is never sent a GOAWAY
// for its age, and a stream open longer than keepAliveTimeout is not cut.
test('h2: keepAliveTimeout counts from the last stream; a session in use or with a stream open stays', async () => {
  // Gaps of a third of the limit, not more: a loaded machine can stall the test for a few hundred
  // milliseconds, and a gap plus a stall must stay under keepAliveTimeout.
  const slowScript = "if (href === '/slow') { disableEndElseCallbackExecute = true; setTimeout(() => responseEnd('slow'), 1500); }\n";
  const quick = await startTlsPipeline({ config: { enableHTTP2: true, keepAliveTimeout: 1000, useWebRootServerSideScript: true }, files: { 'index.html': 'hello\n', 'serverSideScript.js': slowScript } });
  try {
    const session = h2Connect(quick.httpsUrl);
    let goawayAt = null;
    const closed = new Promise((resolve) => session.once('close', resolve));
    session.once('goaway', () => { goawayAt = Date.now(); });
    for (let i = 0; i < 5; i++) { // 5 requests 300 ms apart: 1.5 s of use, each gap under 1 s
      assert.equal((await h2Request(quick.httpsUrl, '/', { session })).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    assert.equal(goawayAt, null, 'no GOAWAY while the session is in use');
    const slow = await h2Request(quick.httpsUrl, '/slow', { session });
    const slowEndedAt = Date.now();
    assert.equal(slow.status, 200);
    assert.equal(slow.body.toString(), 'slow', 'a stream open longer than keepAliveTimeout is answered');
    assert.equal(goawayAt, null, 'no GOAWAY while a stream is open');
    await closed;
    assert.ok(goawayAt - slowEndedAt >= 800, `idle counted from the last stream's end (GOAWAY ${goawayAt - slowEndedAt} ms after it)`);
  } finally {
    await quick.stop();
  }
});

// A file from memory goes out as HEADERS and one DATA frame that ends the stream, a 304 as
// HEADERS alone; not the compatibility API's body, then an empty DATA frame a turn later (one more
// TLS record and write per response). nghttp -v prints the frames as they arrive.
test('h2: a small file is one DATA frame ending the stream, a 304 its HEADERS alone, a HEAD as before; the access log has them', async (t) => {
  const nghttp = ensureDebianPackage('nghttp', 'nghttp2-client');
  if (nghttp.skip) return t.skip(nghttp.skip);
  const page = 'x'.repeat(1000);
  const site = await startTlsPipeline({ config: { enableHTTP2: true, enableLogging: true }, files: { 'page.html': page } });
  t.after(() => site.stop());
  const frames = async (headers, method = 'GET') => {
    const args = ['-nv', '-H', 'accept-encoding: identity', ...(method === 'HEAD' ? ['-H', ':method: HEAD'] : []), ...headers.flatMap((h) => ['-H', h]), `${site.httpsUrl}/page.html`];
    const { stdout } = await execFileAsync(nghttp.path, args, { timeout: 10000 });
    const received = [...stdout.matchAll(/recv (HEADERS|DATA) frame <length=(\d+), flags=0x([0-9a-f]+), stream_id=13>/g)];
    const etag = /recv \(stream_id=13\) etag: (.+)/.exec(stdout);
    const status = /recv \(stream_id=13\) :status: (\d+)/.exec(stdout);
    return { status: status && status[1], etag: etag && etag[1].trim(), frames: received.map(([, type, length, flags]) => ({ type, length: Number(length), endStream: (parseInt(flags, 16) & 1) === 1 })) };
  };
  const ok = await frames([]);
  assert.equal(ok.status, '200');
  assert.deepEqual(ok.frames, [{ type: 'HEADERS', length: ok.frames[0].length, endStream: false }, { type: 'DATA', length: 1000, endStream: true }], 'the body in one DATA frame with END_STREAM, nothing after it');
  const notModified = await frames([`if-none-match: ${ok.etag}`]);
  assert.equal(notModified.status, '304');
  assert.deepEqual(notModified.frames.map((f) => [f.type, f.endStream]), [['HEADERS', true]], 'a 304 is its HEADERS frame, ending the stream');
  const head = await frames([], 'HEAD');
  assert.equal(head.status, '200');
  assert.deepEqual(head.frames.map((f) => [f.type, f.endStream]), [['HEADERS', true]]);
  await site.waitForLog(/"GET \/page\.html HTTP\/2\.0" 200 1000 /, 'stdout');
  await site.waitForLog(/"GET \/page\.html HTTP\/2\.0" 304 /, 'stdout');
  await site.waitForLog(/"HEAD \/page\.html HTTP\/2\.0" 200 /, 'stdout');
});

// The head of a file answered in one go is the headers set before it (Server, customHeaders, a
// script's), then the file's own, a later one replacing an earlier one of the same name in any case;
// after it, the response's header readers answer from what was sent.
test('h2: a file answered in one go sends the headers set before it, the file\'s own winning, and the readers see them', async (t) => {
  const seen = [];
  const script = `res.setHeader('X-From-Script', 'yes');
res.setHeader('content-TYPE', 'text/x-replaced-by-the-file');
res.on('finish', () => process.emit('svr-test-headers', [res.getHeader('Content-Length'), res.hasHeader('etag'), res.getHeaderNames().includes(':status'), res.getHeaders()['x-from-script']]));
`;
  const site = await startTlsPipeline({ config: { enableHTTP2: true, useWebRootServerSideScript: true, customHeaders: { 'X-Site': 'a' } }, files: { 'page.html': 'y'.repeat(500), 'serverSideScript.js': script } });
  t.after(() => site.stop());
  const onHeaders = (values) => seen.push(values);
  process.on('svr-test-headers', onHeaders);
  t.after(() => process.off('svr-test-headers', onHeaders));
  const http2 = require('node:http2');
  const { setHeader } = http2.Http2ServerResponse.prototype;
  const setOneByOne = [];
  http2.Http2ServerResponse.prototype.setHeader = function counted(name, value) {
    setOneByOne.push(String(name).toLowerCase());
    return setHeader.call(this, name, value);
  };
  let res;
  try {
    res = await h2Request(site.httpsUrl, '/page.html', { headers: { 'accept-encoding': 'identity' } });
  } finally {
    http2.Http2ServerResponse.prototype.setHeader = setHeader;
  }
  const fileOwn = ['etag', 'last-modified', 'content-length', 'accept-ranges'];
  assert.deepEqual(setOneByOne.filter((name) => fileOwn.includes(name)), [], 'the file\'s own headers go into the head object');
  assert.equal(res.status, 200);
  assert.equal(res.headers.server, 'svr');
  assert.equal(res.headers['x-site'], 'a');
  assert.equal(res.headers['x-from-script'], 'yes');
  assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  assert.equal(res.headers['content-length'], '500');
  assert.deepEqual(seen, [[500, true, false, 'yes']]);
});

// Trailers asked for before the file is answered still go out (after the body, in a HEADERS frame).
test('h2: trailers a script adds before a static answer still follow the body', async (t) => {
  const nghttp = ensureDebianPackage('nghttp', 'nghttp2-client');
  if (nghttp.skip) return t.skip(nghttp.skip);
  const script = "if (href === '/page.html') res.addTrailers({ 'x-checked': 'yes' });\n";
  const site = await startTlsPipeline({ config: { enableHTTP2: true, useWebRootServerSideScript: true }, files: { 'page.html': 'x'.repeat(100), 'serverSideScript.js': script } });
  t.after(() => site.stop());
  const { stdout } = await execFileAsync(nghttp.path, ['-nv', '-H', 'accept-encoding: identity', `${site.httpsUrl}/page.html`], { timeout: 10000 });
  assert.match(stdout, /recv \(stream_id=13\) :status: 200/);
  assert.match(stdout, /recv DATA frame <length=100, flags=0x00, stream_id=13>/, 'the body, not ending the stream');
  assert.match(stdout, /recv \(stream_id=13\) x-checked: yes/, 'the trailer');
});

test('no cleartext HTTP/2 (h2c) on the plain port', async () => {
  const res = await curl(['--http2-prior-knowledge', '--output', '/dev/null', '--write-out', '%{http_version}', `${server.url}/`]);
  assert.notEqual(res.stdout.toString(), '2');
});

test('h2: a session idle for keepAliveTimeout is closed with a GOAWAY', async () => {
  const quick = await startTlsPipeline({ config: { enableHTTP2: true, keepAliveTimeout: 300 } });
  try {
    const session = h2Connect(quick.httpsUrl);
    const goaway = new Promise((resolve) => session.once('goaway', (code) => resolve(code)));
    const closed = new Promise((resolve) => session.once('close', resolve));
    const res = await h2Request(quick.httpsUrl, '/', { session });
    assert.equal(res.status, 200);
    const startedAt = Date.now();
    assert.equal(await goaway, 0, 'GOAWAY with NO_ERROR');
    await closed;
    assert.ok(Date.now() - startedAt >= 250, 'not before the timeout');
  } finally {
    await quick.stop();
  }
});

test('h2: an :authority that is not a host name or address with a port gets 400, as a Host over HTTP/1.1', async () => {
  // nghttp2 resets a stream whose :authority holds characters no authority has ('/', ' ', and
  // with the nghttp2 of Node 22 and 24 '@'); one made of allowed characters in a wrong shape
  // reaches svr.
  for (const authority of ['evil.example/x', 'a b']) {
    await assert.rejects(h2Request(server.httpsUrl, '/dir/file.txt', { headers: { ':authority': authority } }), /NGHTTP2_PROTOCOL_ERROR/, authority);
  }
  const userinfo = await h2Request(server.httpsUrl, '/dir/file.txt', { headers: { ':authority': 'x@evil.example' } }).catch((error) => ({ status: error.message }));
  assert.ok(userinfo.status === 400 || /NGHTTP2_PROTOCOL_ERROR/.test(userinfo.status), `x@evil.example: ${userinfo.status}`);
  for (const authority of ['a..b', 'x:80:80', 'x:8o']) {
    const res = await h2Request(server.httpsUrl, '/dir/file.txt', { headers: { ':authority': authority } }).catch((error) => ({ status: error.code || error.message }));
    assert.equal(res.status, 400, authority);
  }
  assert.equal((await h2Request(server.httpsUrl, '/dir/file.txt', { headers: { ':authority': `localhost:${server.sport}` } })).status, 200);
});
