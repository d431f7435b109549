'use strict';
// enableCompression: negotiation, Vary, ETags per coding, 304/206, what is never compressed,
// precompressed .br/.gz siblings. The pipeline in-process on real sockets (a spawned worker where
// its descriptors are counted, TLS for HTTP/2); bodies are decompressed here.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { startServer, request } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

const JS = 'function add(a, b) { return a + b; }\n'.repeat(200); // 7.4 KB of text
const CSS = 'body { margin: 0; padding: 0; color: #333; }\n'.repeat(100);
const SMALL = 'tiny text under the threshold\n';
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), Buffer.alloc(8000, 7)]);
const BIG = 'the same line, again and again, in a file too large to keep in memory\n'.repeat(2000); // 140 KB

function decode(res) {
  const coding = res.headers['content-encoding'];
  if (coding === 'br') return zlib.brotliDecompressSync(res.body).toString();
  if (coding === 'gzip') return zlib.gunzipSync(res.body).toString();
  assert.equal(coding, undefined, `unexpected coding ${coding}`);
  return res.text;
}

describe('compression (enableCompression: true, the default)', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({
      // dontCompress replaces the default list: only nocompress/ is excluded by path here.
      config: { fileCacheMaxFileSize: 65536, customHeaders: {}, dontCompress: ['/^\\/nocompress\\//'], enableDirectoryListing: true },
      files: {
        'app.js': JS, 'style.css': CSS, 'small.txt': SMALL, 'pic.png': PNG, 'big.txt': BIG,
        'data.json': JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}` })) }),
        'nocompress/keep.js': JS,
      },
    });
  });
  after(() => srv.stop());

  const get = (p, headers = {}, method = 'GET') => request(srv.url + p, { headers, method });

  test('br is preferred when the client accepts br and gzip; the body decodes to the file', async () => {
    const res = await get('/app.js', { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-encoding'], 'br');
    assert.equal(res.headers.vary, 'Accept-Encoding');
    assert.equal(Number(res.headers['content-length']), res.body.length);
    assert.ok(res.body.length < JS.length / 4, `compressed to ${res.body.length} bytes`);
    assert.equal(decode(res), JS);
  });

  test('gzip when that is all the client accepts', async () => {
    const res = await get('/style.css', { 'accept-encoding': 'gzip' });
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.equal(decode(res), CSS);
  });

  test('q-values: br;q=0 refuses br, a higher q wins, gzip;q=0 leaves identity', async () => {
    assert.equal((await get('/app.js', { 'accept-encoding': 'br;q=0, gzip' })).headers['content-encoding'], 'gzip');
    assert.equal((await get('/app.js', { 'accept-encoding': 'br;q=0.2, gzip;q=0.8' })).headers['content-encoding'], 'gzip');
    assert.equal((await get('/app.js', { 'accept-encoding': 'gzip;q=0.5, br;q=0.9' })).headers['content-encoding'], 'br');
    const none = await get('/app.js', { 'accept-encoding': 'gzip;q=0' });
    assert.equal(none.headers['content-encoding'], undefined);
    assert.equal(none.text, JS);
    const allRefused = await get('/app.js', { 'accept-encoding': 'br;q=0, gzip;q=0.000' });
    assert.equal(allRefused.headers['content-encoding'], undefined);
  });

  test('"*" stands for codings not named; *;q=0 with gzip named gives gzip', async () => {
    assert.equal((await get('/app.js', { 'accept-encoding': '*' })).headers['content-encoding'], 'br');
    assert.equal((await get('/app.js', { 'accept-encoding': 'gzip, *;q=0' })).headers['content-encoding'], 'gzip');
    assert.equal((await get('/app.js', { 'accept-encoding': '*;q=0' })).headers['content-encoding'], undefined);
  });

  test('identity: asked for by name, preferred by q-value, or no Accept-Encoding at all', async () => {
    for (const ae of ['identity', 'gzip;q=0.5, identity', undefined, '']) {
      const headers = ae === undefined ? {} : { 'accept-encoding': ae };
      const res = await get('/app.js', headers);
      assert.equal(res.headers['content-encoding'], undefined, `Accept-Encoding: ${ae}`);
      assert.equal(res.headers.vary, 'Accept-Encoding', `Accept-Encoding: ${ae}`);
      assert.equal(res.text, JS);
    }
  });

  test('each coding has its own ETag, and If-None-Match is checked against the one served', async () => {
    const identity = await get('/app.js');
    const br = await get('/app.js', { 'accept-encoding': 'br' });
    const gz = await get('/app.js', { 'accept-encoding': 'gzip' });
    const tags = [identity.headers.etag, br.headers.etag, gz.headers.etag];
    assert.ok(tags.every(Boolean));
    assert.equal(new Set(tags).size, 3, `distinct ETags: ${tags}`);
    assert.match(br.headers.etag, /-br"$/);

    const notModified = await get('/app.js', { 'accept-encoding': 'br', 'if-none-match': br.headers.etag });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.body.length, 0);
    assert.equal(notModified.headers.etag, br.headers.etag);
    assert.equal(notModified.headers.vary, 'Accept-Encoding');
    assert.equal(notModified.headers['content-encoding'], undefined);

    // the identity tag does not validate the br representation, nor the br tag a gzip one
    const other = await get('/app.js', { 'accept-encoding': 'br', 'if-none-match': identity.headers.etag });
    assert.equal(other.status, 200);
    assert.equal(decode(other), JS);
    assert.equal((await get('/app.js', { 'accept-encoding': 'gzip', 'if-none-match': br.headers.etag })).status, 200);
    assert.equal((await get('/app.js', { 'if-none-match': identity.headers.etag })).status, 304);
  });

  test('HEAD shows the headers GET would send, without a body', async () => {
    const got = await get('/data.json', { 'accept-encoding': 'br' });
    const head = await get('/data.json', { 'accept-encoding': 'br' }, 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.equal(head.headers['content-encoding'], 'br');
    assert.equal(head.headers['content-length'], got.headers['content-length']);
    assert.equal(head.headers.etag, got.headers.etag);
  });

  test('a Range request gets an identity 206, never a compressed one', async () => {
    const res = await get('/app.js', { 'accept-encoding': 'br, gzip', range: 'bytes=0-99' });
    assert.equal(res.status, 206);
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers['content-range'], `bytes 0-99/${JS.length}`);
    assert.equal(res.text, JS.slice(0, 100));
  });

  test('images, small files and dontCompress paths are sent as they are', async () => {
    const png = await get('/pic.png', { 'accept-encoding': 'br, gzip' });
    assert.equal(png.headers['content-encoding'], undefined);
    assert.equal(png.headers.vary, undefined);
    assert.ok(png.body.equals(PNG));
    const small = await get('/small.txt', { 'accept-encoding': 'br, gzip' });
    assert.equal(small.headers['content-encoding'], undefined);
    assert.equal(small.text, SMALL);
    // the same bytes as app.js, which is compressed: only the dontCompress pattern keeps it as it is
    const kept = await get('/nocompress/keep.js', { 'accept-encoding': 'br, gzip' });
    assert.equal(kept.status, 200);
    assert.equal(kept.headers['content-encoding'], undefined);
    assert.equal(kept.text, JS);
  });

  test('directory listings and error pages are not compressed, whatever their size', async () => {
    for (const accept of ['text/html', 'application/json']) {
      const listing = await get('/', { 'accept-encoding': 'br, gzip', accept });
      assert.equal(listing.status, 200);
      assert.ok(listing.body.length >= 512, `${accept} listing of ${listing.body.length} bytes, large enough to compress`);
      assert.equal(listing.headers['content-encoding'], undefined, accept);
      assert.match(listing.text, /app\.js/);
      const error = await get('/missing.js', { 'accept-encoding': 'br, gzip', accept });
      assert.equal(error.status, 404);
      assert.equal(error.headers['content-encoding'], undefined, accept);
    }
    const page = await get('/missing.js', { 'accept-encoding': 'br, gzip' });
    assert.ok(page.body.length >= 512, `error page of ${page.body.length} bytes, large enough to compress`);
    assert.match(page.text, /404 Not Found/);
  });

  test('a compressed response has no Accept-Ranges; the identity one has', async () => {
    for (const coding of ['br', 'gzip']) {
      const res = await get('/app.js', { 'accept-encoding': coding });
      assert.equal(res.headers['content-encoding'], coding);
      assert.equal(res.headers['accept-ranges'], undefined, coding);
    }
    assert.equal((await get('/app.js')).headers['accept-ranges'], 'bytes');
  });

  test('a file too large to keep in memory is compressed as it streams', async () => {
    const since = srv.stdout().length;
    const res = await get('/big.txt', { 'accept-encoding': 'gzip', 'user-agent': 'streamed-gzip-probe' });
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.equal(res.headers['content-length'], undefined);
    assert.equal(decode(res), BIG);
    // the access log reports the bytes sent, though there was no Content-Length
    const line = await srv.waitForLog(/streamed-gzip-probe/, 'stdout', since);
    assert.match(line, new RegExp(`" 200 ${res.body.length} "`));
    const br = await get('/big.txt', { 'accept-encoding': 'br' });
    assert.equal(decode(br), BIG);
    const again = await get('/big.txt', { 'accept-encoding': 'br', 'if-none-match': br.headers.etag });
    assert.equal(again.status, 304);
  });

  test('JSON is compressed too', async () => {
    const res = await get('/data.json', { 'accept-encoding': 'gzip' });
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.equal(JSON.parse(decode(res)).items.length, 200);
  });
});

describe('precompressed siblings', () => {
  let srv;
  // Sibling content that differs from what compressing the original would give, so the test can
  // tell which one was sent.
  const FROM_BR = 'this came from app.js.br\n'.repeat(40);
  const FROM_GZ = 'this came from app.js.gz\n'.repeat(40);
  before(async () => {
    srv = await startPipeline({ files: { 'app.js': JS, 'old.js': JS, 'link.js': JS } });
    const old = new Date(Date.now() - 3600 * 1000);
    fs.writeFileSync(path.join(srv.root, 'app.js.br'), zlib.brotliCompressSync(FROM_BR));
    fs.writeFileSync(path.join(srv.root, 'app.js.gz'), zlib.gzipSync(FROM_GZ));
    fs.writeFileSync(path.join(srv.root, 'old.js.br'), zlib.brotliCompressSync(FROM_BR));
    fs.utimesSync(path.join(srv.root, 'old.js.br'), old, old); // older than old.js: stale
    fs.symlinkSync(path.join(srv.root, 'app.js.br'), path.join(srv.root, 'link.js.br'));
  });
  after(() => srv.stop());

  test('a .br or .gz next to the file, at least as new, is sent as it is', async () => {
    const br = await request(`${srv.url}/app.js`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(decode(br), FROM_BR);
    assert.equal(br.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(br.headers.vary, 'Accept-Encoding');
    const gz = await request(`${srv.url}/app.js`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(decode(gz), FROM_GZ);
    const notModified = await request(`${srv.url}/app.js`, { headers: { 'accept-encoding': 'br', 'if-none-match': br.headers.etag } });
    assert.equal(notModified.status, 304);
  });

  test('a sibling older than the file is ignored: the file is compressed instead', async () => {
    const res = await request(`${srv.url}/old.js`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(res.headers['content-encoding'], 'br');
    assert.equal(decode(res), JS);
  });

  test('a sibling that is a symlink is ignored', async () => {
    const res = await request(`${srv.url}/link.js`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(decode(res), JS);
  });

  test('a sibling changed or removed is seen by the next request, with a new ETag', async () => {
    const file = path.join(srv.root, 'app.js.gz');
    const before = await request(`${srv.url}/app.js`, { headers: { 'accept-encoding': 'gzip' } });
    const CHANGED = 'the sibling was replaced\n'.repeat(30);
    fs.writeFileSync(file + '.tmp', zlib.gzipSync(CHANGED));
    fs.renameSync(file + '.tmp', file);
    const after = await request(`${srv.url}/app.js`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(decode(after), CHANGED);
    assert.notEqual(after.headers.etag, before.headers.etag);
    fs.unlinkSync(file);
    const gone = await request(`${srv.url}/app.js`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(decode(gone), JS);
  });
});

describe('enableCompression: false', () => {
  let srv;
  before(async () => {
    srv = await startPipeline({ config: { enableCompression: false }, files: { 'app.js': JS } });
    fs.writeFileSync(path.join(srv.root, 'app.js.br'), zlib.brotliCompressSync('sibling\n'));
  });
  after(() => srv.stop());

  test('nothing is compressed, no sibling is used, and there is no Vary', async () => {
    const res = await request(`${srv.url}/app.js`, { headers: { 'accept-encoding': 'br, gzip' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers.vary, undefined);
    assert.equal(res.text, JS);
  });
});

describe('Vary with customHeaders', () => {
  test('an existing Vary from customHeaders is kept and Accept-Encoding added', async () => {
    const srv = await startPipeline({ config: { customHeaders: { Vary: 'Origin' } }, files: { 'app.js': JS, 'pic.png': PNG } });
    try {
      const res = await request(`${srv.url}/app.js`, { headers: { 'accept-encoding': 'br' } });
      assert.equal(res.headers.vary, 'Origin, Accept-Encoding');
      const png = await request(`${srv.url}/pic.png`, { headers: { 'accept-encoding': 'br' } });
      assert.equal(png.headers.vary, 'Origin');
    } finally {
      await srv.stop();
    }
  });
});

describe('negotiate and isCompressibleType (unit)', () => {
  const { negotiate, isCompressibleType } = require('../../../lib/pipeline/static/compression');
  test('Accept-Encoding values', () => {
    const cases = [
      [undefined, null], ['', null], ['br', 'br'], ['gzip', 'gzip'], ['GZIP', 'gzip'], ['x-gzip', 'gzip'],
      ['gzip, br', 'br'], ['br;q=0, gzip', 'gzip'], ['br; q=0.5, gzip; q=0.6', 'gzip'], ['br;q=1.0, gzip;q=1', 'br'],
      ['gzip;q=0', null], ['*', 'br'], ['*;q=0', null], ['gzip, *;q=0', 'gzip'], ['br;q=0, *', 'gzip'],
      ['identity', null], ['identity;q=0.5, gzip;q=0.4', null], ['identity;q=0, gzip;q=0.1', 'gzip'],
      ['deflate', null], ['compress, zstd', null], ['br;q=2', null], ['br;q=abc, gzip', 'gzip'], ['br;level=5;q=0', null],
    ];
    for (const [header, expected] of cases) assert.equal(negotiate(header), expected, `Accept-Encoding: ${header}`);
  });
  test('types', () => {
    for (const t of ['text/html; charset=utf-8', 'text/css', 'text/javascript; charset=utf-8', 'application/json',
      'image/svg+xml', 'application/ld+json', 'application/wasm', 'application/xml', 'font/ttf']) {
      assert.equal(isCompressibleType(t), true, t);
    }
    for (const t of ['image/png', 'image/jpeg', 'video/mp4', 'audio/mpeg', 'application/zip', 'application/gzip',
      'font/woff2', 'application/octet-stream', 'application/pdf', 'text/event-stream', '', undefined]) {
      assert.equal(isCompressibleType(t), false, String(t));
    }
  });
});

describe('streamed compression and file descriptors', { skip: process.platform !== 'linux' && 'needs /proc' }, () => {
  const http = require('node:http');
  const crypto = require('node:crypto');
  const { readyWorkerPids } = require('../../support/helpers');
  const fdCount = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;
  // Polls (no fixed sleep) until the count has not changed for 200 ms, or until check passes.
  async function settledFdCount(pid, check = () => false) {
    let last = fdCount(pid);
    let since = Date.now();
    const deadline = Date.now() + 10000;
    while (Date.now() - since < 200 && Date.now() < deadline && !check(last)) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      const n = fdCount(pid);
      if (n !== last) { last = n; since = Date.now(); }
    }
    return last;
  }
  function abortedDownload(url, headers) {
    return new Promise((resolve, reject) => {
      const req = http.get(url, { agent: false, headers }, (res) => {
        res.once('data', () => { req.destroy(); resolve(res.headers['content-encoding']); });
      });
      req.on('error', (err) => { if (err.code !== 'ECONNRESET') reject(err); });
    });
  }

  test('30 aborted downloads of a large text file being compressed leave no descriptor open', async () => {
    const text = crypto.randomBytes(6 * 1024 * 1024).toString('base64'); // 8 MiB: streamed, not kept
    const srv = await startServer({ config: { workers: 1 }, files: { 'big.txt': text } });
    try {
      await srv.waitForLog(/worker \d+ ready/);
      const [pid] = readyWorkerPids(srv);
      const full = await request(`${srv.url}/big.txt`, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(decode(full), text);
      const before = await settledFdCount(pid);
      for (let i = 0; i < 30; i++) {
        const coding = await abortedDownload(`${srv.url}/big.txt`, { 'accept-encoding': i % 2 ? 'br' : 'gzip' });
        assert.equal(coding, i % 2 ? 'br' : 'gzip');
      }
      const after = await settledFdCount(pid, (n) => n <= before);
      assert.ok(after <= before, `worker had ${before} descriptors before and ${after} after`);
    } finally {
      await srv.stop();
    }
  });
});

// In-process behind lib/net's HTTP/2 server (support/pipeline.js, asWorker).
describe('over HTTP/2', () => {
  const { startTlsPipeline, h2Request } = require('../../support/tls-helpers');
  let srv;
  before(async () => {
    srv = await startTlsPipeline({ config: { enableHTTP2: true, fileCacheMaxFileSize: 65536 }, files: { 'app.js': JS, 'big.txt': BIG } });
  });
  after(() => srv.stop());

  test('kept and streamed files are compressed, with Vary and the coding\'s ETag; 304 against it', async () => {
    const res = await h2Request(srv.httpsUrl, '/app.js', { headers: { 'accept-encoding': 'br, gzip' } });
    assert.equal(res.status, 200);
    assert.equal(res.alpn, 'h2');
    assert.equal(res.headers['content-encoding'], 'br');
    assert.equal(res.headers.vary, 'Accept-Encoding');
    assert.equal(decode(res), JS);
    const again = await h2Request(srv.httpsUrl, '/app.js', { headers: { 'accept-encoding': 'br', 'if-none-match': res.headers.etag } });
    assert.equal(again.status, 304);
    const big = await h2Request(srv.httpsUrl, '/big.txt', { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(big.headers['content-encoding'], 'gzip');
    assert.equal(decode(big), BIG);
  });
});
