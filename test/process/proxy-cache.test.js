'use strict';
// The reverse proxy's response cache, with real sockets: two svr workers in front of a small
// Node application that counts what reaches it. Safety first (one user's answer is never another's:
// Authorization, Cookie, Set-Cookie, private, Vary; poisoning through unkeyed headers fails; a
// huge response streams through without being stored; the directory stays within its bound),
// then Cache-Control, revalidation, stale answers, one upstream request for concurrent misses,
// PURGE, X-Cache and the metrics, over HTTP/1.1 and HTTP/2.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { startServer, request, waitUntil } = require('../support/helpers');

const HUGE_BYTES = 64 * 1024 * 1024;
const LAST_MODIFIED = 'Mon, 01 Jan 2024 00:00:00 GMT'; // /dated's
const BEFORE_LAST_MODIFIED = 'Sun, 31 Dec 2023 00:00:00 GMT';

// The application: answers by path, and counts the requests per path (with their headers).
function startUpstream() {
  const seen = new Map(); // path -> [headers]
  const held = [];
  let abandoned = 0; // requests the upstream never answered that svr then closed
  const releaseHeld = () => { for (const res of held.splice(0)) res.end('.'); };
  const count = (p) => (seen.get(p) || []).length;
  const server = http.createServer((req, res) => {
    const p = req.url.split('?')[0];
    if (!seen.has(p)) seen.set(p, []);
    seen.get(p).push(req.headers);
    const n = count(p);
    const send = (headers, body) => { res.writeHead(200, { 'content-type': 'text/plain', ...headers }); res.end(body); };
    switch (p) {
      case '/public': return send({ 'cache-control': 'public, max-age=60' }, `public ${n}`);
      case '/private': return send({ 'cache-control': 'private, max-age=60' }, `private ${n}`);
      case '/no-store': return send({ 'cache-control': 'no-store, max-age=60' }, `no-store ${n}`);
      case '/set-cookie': return send({ 'cache-control': 'max-age=60', 'set-cookie': `session=${n}` }, `set-cookie ${n}`);
      case '/no-lifetime': return send({}, `no-lifetime ${n}`);
      case '/expires': return send({ expires: new Date(Date.now() + 60000).toUTCString(), date: new Date().toUTCString() }, `expires ${n}`);
      case '/user': return send({ 'cache-control': 'max-age=60' }, `user ${req.headers.authorization || ''}${req.headers.cookie || ''} ${n}`);
      case '/vary': return send({ 'cache-control': 'max-age=60', vary: 'Accept-Language' }, `language ${req.headers['accept-language']} ${n}`);
      case '/reflect': return send({ 'cache-control': 'max-age=60' }, `host ${req.headers['x-forwarded-host']} url ${req.headers['x-original-url'] || req.url} ${n}`);
      case '/slow': return setTimeout(() => send({ 'cache-control': 'max-age=60' }, `slow ${n}`), 300);
      case '/first-unanswered': // the first request is never answered; its end is counted
        if (n === 1) return res.once('close', () => { abandoned++; });
        return send({ 'cache-control': 'max-age=60' }, `first-unanswered ${n}`);
      case '/short':
        if (req.headers['if-none-match'] === '"v1"') { res.writeHead(304, { etag: '"v1"', 'cache-control': 'max-age=1' }); return res.end(); }
        return send({ etag: '"v1"', 'cache-control': 'max-age=1' }, `short ${n}`);
      case '/no-cache':
        if (req.headers['if-none-match'] === '"nc"') { res.writeHead(304, { etag: '"nc"', 'cache-control': 'no-cache' }); return res.end(); }
        return send({ etag: '"nc"', 'cache-control': 'no-cache' }, `no-cache ${n}`);
      case '/tagged': return send({ etag: '"t1"', 'cache-control': 'max-age=60' }, `tagged ${n}`);
      case '/dated': return send({ etag: '"d1"', 'last-modified': LAST_MODIFIED, 'cache-control': 'max-age=60' }, `dated ${n}`);
      case '/varied': return send({ etag: '"v2"', 'last-modified': LAST_MODIFIED, 'cache-control': 'max-age=60', vary: 'Accept-Encoding, Accept-Language' }, `varied ${req.headers['accept-language']} ${n}`);
      case '/weak': return send({ etag: 'W/"w1"', 'cache-control': 'max-age=60' }, `weak ${n}`);
      case '/gone': res.writeHead(404, { etag: '"g1"', 'cache-control': 'max-age=60' }); return res.end(`gone ${n}`);
      case '/plain-short': return send({ 'cache-control': 'max-age=1' }, `plain-short ${n}`);
      case '/pin': // no validator of its own; answers 304 to any If-None-Match: *, as Express's does
        if (req.headers['if-none-match'] === '*') { res.writeHead(304, { 'cache-control': 'max-age=1' }); return res.end(); }
        return send({ 'cache-control': 'max-age=1' }, `pin ${n}`);
      case '/swr': return send({ 'cache-control': 'max-age=1, stale-while-revalidate=30' }, `swr ${n}`);
      case '/sie': return send({ 'cache-control': 'max-age=1, stale-if-error=30' }, `sie ${n}`);
      case '/huge': {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'max-age=60', 'content-length': HUGE_BYTES });
        const chunk = Buffer.alloc(1024 * 1024, 120);
        let sent = 0;
        const more = () => { while (sent < HUGE_BYTES) { sent += chunk.length; if (!res.write(chunk)) return res.once('drain', more); } return res.end(); };
        return more();
      }
      default:
        if (p.startsWith('/held/')) { // 60 KiB now, the end when the test says (releaseHeld)
          res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'max-age=60' });
          res.write('h'.repeat(60 * 1024));
          held.push(res);
          return undefined;
        }
        if (p.startsWith('/sized/')) return send({ 'cache-control': 'max-age=60' }, 'y'.repeat(30 * 1024));
        res.writeHead(404);
        return res.end();
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port, count, seen, releaseHeld, abandoned: () => abandoned })));
}

function metricValue(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

function directoryBytes(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? directoryBytes(full) : fs.statSync(full).size;
  }
  return total;
}

async function setUp(t, { proxyCache = {}, extra = {}, files = {}, workers = 2 } = {}) {
  const upstream = await startUpstream();
  t.after(() => upstream.server.close());
  const server = await startServer({
    config: {
      workers, schedulingPolicy: 'rr', metrics: { path: '/metrics', onSitePort: true }, stateDirectory: 'state',
      proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${upstream.port}`], cache: true }], proxyCache, ...extra,
    },
    files,
  });
  t.after(() => server.stop());
  const agent = new http.Agent({ keepAlive: false }); // a fresh connection each: both workers answer
  const get = (p, headers = {}) => request(`${server.url}${p}`, { agent, headers });
  const entries = async () => metricValue((await request(`${server.url}/metrics`)).text, 'svr_proxy_cache_entries');
  // A MISS is stored just after its answer ends: ask the metrics until the primary has heard of
  // the file (each ask is a round trip, so this waits on the server, not on a clock).
  const stored = async (n) => {
    let count = await entries();
    for (let i = 0; i < 200 && count < n; i++) count = await entries();
    assert.ok(count >= n, `${n} entries stored (${count})`);
  };
  return { upstream, server, get, entries, stored, cacheDir: path.join(server.dir, 'state', 'proxy-cache') };
}

test('a fresh response is stored once and answered by every worker; what must not be stored is not', async (t) => {
  const { upstream, server, get, stored } = await setUp(t);
  const first = await get('/public');
  assert.equal(first.headers['x-cache'], 'MISS');
  await stored(1);
  for (let i = 0; i < 6; i++) {
    const hit = await get('/public');
    assert.equal(hit.headers['x-cache'], 'HIT');
    assert.equal(hit.text, 'public 1');
    assert.ok(Number(hit.headers.age) >= 0);
  }
  const head = await request(`${server.url}/public`, { method: 'HEAD' });
  assert.deepEqual([head.headers['x-cache'], head.headers['content-length'], head.body.length], ['HIT', '8', 0], 'a HEAD from the stored GET');
  assert.equal((await get('/public', { 'cache-control': 'no-cache', pragma: 'no-cache' })).headers['x-cache'], 'HIT', 'the client\'s Cache-Control does not bypass the cache');
  assert.equal(upstream.count('/public'), 1, 'the upstream was asked once for nine requests over two workers');
  // The access log ends the line of a caching rule's request with its X-Cache status.
  await server.waitForLog(/"GET \/public HTTP\/1\.1" 200 8 "-" "-" \d+\.\d{3} MISS$/, 'stdout');
  await server.waitForLog(/"GET \/public HTTP\/1\.1" 200 8 "-" "-" \d+\.\d{3} HIT$/, 'stdout');
  assert.equal((await get('/expires')).headers['x-cache'], 'MISS');
  await stored(2);
  assert.equal((await get('/expires')).headers['x-cache'], 'HIT', 'Expires gives a lifetime too');
  for (const p of ['/private', '/no-store', '/set-cookie', '/no-lifetime']) {
    const answers = [await get(p), await get(p)];
    assert.deepEqual(answers.map((a) => a.headers['x-cache']), ['MISS', 'MISS'], p);
    assert.equal(upstream.count(p), 2, `${p} is never answered from the cache`);
  }
  assert.equal((await get('/set-cookie')).headers['set-cookie'][0], 'session=3', 'each client gets its own cookie');
});

test('one user\'s answer is never another\'s: Authorization and Cookie bypass the cache, Vary keys it', async (t) => {
  const { get, stored } = await setUp(t);
  const alice = await get('/user', { authorization: 'Basic YWxpY2U6cw==' });
  assert.equal(alice.headers['x-cache'], 'BYPASS');
  const cookie = await get('/user', { cookie: 'session=alice' });
  assert.equal(cookie.headers['x-cache'], 'BYPASS');
  const anonymous = await get('/user');
  assert.equal(anonymous.headers['x-cache'], 'MISS');
  assert.equal(anonymous.text, 'user  3', 'the anonymous answer is not Alice\'s');
  await stored(1);
  assert.equal((await get('/user')).text, 'user  3');
  const bob = await get('/user', { authorization: 'Basic Ym9iOnM=' });
  assert.equal(bob.headers['x-cache'], 'BYPASS');
  assert.match(bob.text, /^user Basic Ym9iOnM= /, 'Bob gets his own answer, not the cached one');

  assert.equal((await get('/vary', { 'accept-language': 'fr' })).text, 'language fr 1');
  await stored(2);
  assert.equal((await get('/vary', { 'accept-language': 'en' })).text, 'language en 2', 'another language is another entry');
  await stored(3);
  const fr = await get('/vary', { 'accept-language': 'fr' });
  assert.deepEqual([fr.headers['x-cache'], fr.text], ['HIT', 'language fr 1']);
  const en = await get('/vary', { 'accept-language': 'en' });
  assert.deepEqual([en.headers['x-cache'], en.text], ['HIT', 'language en 2']);
});

test('cache poisoning through unkeyed headers fails', async (t) => {
  const { upstream, get, stored } = await setUp(t);
  const attack = await get('/reflect', { 'x-original-url': '/admin', 'x-forwarded-host': 'evil.example' });
  assert.equal(attack.headers['x-cache'], 'BYPASS', 'a request with X-Original-URL is never stored');
  assert.match(attack.text, /url \/admin/);
  // X-Forwarded-Host from a client that is not a trusted proxy is replaced by svr before the
  // upstream sees it, so what is stored is the clean answer.
  const forged = await get('/reflect', { 'x-forwarded-host': 'evil.example' });
  assert.equal(forged.headers['x-cache'], 'MISS');
  await stored(1);
  const victim = await get('/reflect');
  assert.equal(victim.headers['x-cache'], 'HIT');
  assert.doesNotMatch(victim.text, /evil|admin/);
  assert.equal(upstream.count('/reflect'), 2);
  for (const headers of [{ 'x-forwarded-port': '1337' }, { 'X_Original_URL': '/admin' }, { 'X.Original.URL': '/admin' }]) {
    assert.equal((await get('/reflect', headers)).headers['x-cache'], 'BYPASS', JSON.stringify(headers));
  }
});

test('the cache asks the upstream without the client\'s conditions and Range: a stale copy cannot be pinned', async (t) => {
  const { upstream, get, stored } = await setUp(t);
  const CONDITIONS = ['if-none-match', 'range', 'if-modified-since', 'if-match', 'if-unmodified-since', 'if-range'];
  // Conditions that pass (If-Match: *, a date to come), so that the answer is the 200 and is stored.
  const passing = { 'if-match': '*', 'if-unmodified-since': new Date(Date.now() + 86400000).toUTCString(), 'if-range': '"pin"' };
  assert.equal((await get('/pin', passing)).text, 'pin 1');
  for (const name of CONDITIONS) assert.equal(upstream.seen.get('/pin')[0][name], undefined, `${name} reached the upstream on a miss`);
  await stored(1);
  // max-age=1: the lifetime ends with the clock, so the test waits for it.
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const attack = await get('/pin', { ...passing, 'if-none-match': '*', range: 'bytes=0-1', 'if-modified-since': new Date().toUTCString() });
  assert.deepEqual([attack.status, attack.headers['x-cache'], attack.text], [200, 'EXPIRED', 'pin 2']);
  const asked = upstream.seen.get('/pin')[1];
  for (const name of CONDITIONS) assert.equal(asked[name], undefined, `${name} reached the upstream`);
  const victim = await get('/pin');
  assert.notEqual(victim.text, 'pin 1', `the next client gets a current answer (${victim.headers['x-cache']})`);
});

test('the client\'s preconditions in RFC 9110 order: a failing If-Match or If-Unmodified-Since gets 412 on a miss and a hit', async (t) => {
  const { upstream, server, get, stored } = await setUp(t);
  const missed = await get('/dated', { 'if-match': '"other"' });
  assert.deepEqual([missed.status, missed.headers['x-cache']], [412, 'MISS'], 'a miss answers as a hit would');
  assert.match(missed.text, /412 Precondition Failed/, 'svr\'s error page');
  const first = await get('/dated');
  assert.deepEqual([first.status, first.headers['x-cache'], first.text], [200, 'MISS', 'dated 2'], 'the response the 412 stood for was not stored');
  assert.equal((await get('/weak')).headers['x-cache'], 'MISS');
  const gone = await get('/gone', { 'if-match': '"other"' });
  assert.deepEqual([gone.status, gone.headers['x-cache'], gone.text], [404, 'MISS', 'gone 1'], 'preconditions are about a 2xx only');
  await stored(3);
  const cases = [
    [{ 'if-match': '"other"' }, 412],
    [{ 'if-match': '"other", "d1"' }, 200],
    [{ 'if-match': '*' }, 200],
    [{ 'if-match': 'W/"d1"' }, 412], // strong comparison
    [{ 'if-unmodified-since': BEFORE_LAST_MODIFIED }, 412],
    [{ 'if-unmodified-since': LAST_MODIFIED }, 200],
    [{ 'if-match': '"d1"', 'if-unmodified-since': BEFORE_LAST_MODIFIED }, 200], // If-Match present: the date is not read
    [{ 'if-match': '"other"', 'if-none-match': '"d1"' }, 412], // If-Match before If-None-Match
    [{ 'if-match': '"d1"', 'if-none-match': '"d1"' }, 304],
    [{ 'if-none-match': 'W/"d1"' }, 304], // weak comparison
    [{ 'if-none-match': '*' }, 304],
    [{ 'if-modified-since': LAST_MODIFIED }, 304],
    [{ 'if-modified-since': BEFORE_LAST_MODIFIED }, 200],
    [{ 'if-none-match': '"other"', 'if-modified-since': LAST_MODIFIED }, 200], // If-None-Match present: the date is not read
  ];
  for (const [headers, status] of cases) {
    const answer = await get('/dated', headers);
    assert.deepEqual([answer.status, answer.headers['x-cache']], [status, 'HIT'], JSON.stringify(headers));
    if (status === 200) assert.equal(answer.text, 'dated 2');
  }
  const weak = await get('/weak', { 'if-match': 'W/"w1"' });
  assert.deepEqual([weak.status, weak.headers['x-cache']], [412, 'HIT'], 'a weak ETag never matches If-Match');
  const storedGone = await get('/gone', { 'if-match': '"other"' });
  assert.deepEqual([storedGone.status, storedGone.headers['x-cache'], storedGone.text], [404, 'HIT', 'gone 1']);
  const unchangedGone = await get('/gone', { 'if-none-match': '"g1"' });
  assert.deepEqual([unchangedGone.status, unchangedGone.headers['x-cache'], unchangedGone.text], [404, 'HIT', 'gone 1']);
  assert.equal(upstream.count('/dated'), 2, 'every conditional request after the first two was answered from the cache');
  await server.waitForLog(/"GET \/dated HTTP\/1\.1" 412 \d+ "-" "-" \d+\.\d{3} HIT$/, 'stdout');
});

// The 412 was sendError's page alone (Vary: Accept): a shared cache in front could give the 412
// computed against one variant to a request for another.
test('a 412 carries the Vary of the response it was computed against, on a miss and a hit, as the 304 does', async (t) => {
  const { upstream, get, stored } = await setUp(t);
  const varyOf = (answer) => String(answer.headers.vary || '').split(',').map((name) => name.trim().toLowerCase()).filter(Boolean);
  const asked = { 'accept-encoding': 'gzip', 'accept-language': 'fr' };
  const missed = await get('/varied', { ...asked, 'if-match': '"other"' });
  assert.deepEqual([missed.status, missed.headers['x-cache']], [412, 'MISS']);
  assert.deepEqual(varyOf(missed), ['accept-encoding', 'accept-language', 'accept'], `a miss: Vary ${missed.headers.vary}`);
  const first = await get('/varied', asked);
  assert.deepEqual([first.status, first.headers['x-cache'], first.text], [200, 'MISS', 'varied fr 2']);
  await stored(1);
  const notModified = await get('/varied', { ...asked, 'if-none-match': '"v2"' });
  assert.deepEqual([notModified.status, notModified.headers['x-cache']], [304, 'HIT']);
  assert.deepEqual(varyOf(notModified), ['accept-encoding', 'accept-language']);
  for (const failing of [{ 'if-match': '"other"' }, { 'if-unmodified-since': BEFORE_LAST_MODIFIED }]) {
    const failed = await get('/varied', { ...asked, ...failing });
    assert.deepEqual([failed.status, failed.headers['x-cache']], [412, 'HIT'], JSON.stringify(failing));
    // the 304's Vary, and Accept: the error page is HTML or JSON by Accept
    assert.deepEqual(varyOf(failed), [...varyOf(notModified), 'accept'], `a hit (${JSON.stringify(failing)}): Vary ${failed.headers.vary}`);
  }
  assert.equal(upstream.count('/varied'), 2, 'the 304 and the 412s after the first two requests came from the entry');
});

test('a response longer than its Content-Length is not stored (the bytes past it are an upstream error) and the client\'s copy is cut', async (t) => {
  const net = require('node:net');
  let asked = 0;
  const upstream = net.createServer((socket) => socket.once('data', () => {
    asked++;
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\nCache-Control: max-age=60\r\n\r\n0123456789ABCDEFGHIJ');
  }));
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t.after(() => upstream.close());
  const server = await startServer({
    config: {
      workers: 1, stateDirectory: 'state', metrics: { path: '/metrics', onSitePort: true },
      proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${upstream.address().port}`], cache: true }],
    },
  });
  t.after(() => server.stop());
  const agent = new http.Agent({ keepAlive: false });
  for (let i = 0; i < 3; i++) {
    const answer = await request(`${server.url}/long`, { agent }).catch((error) => ({ error }));
    assert.notEqual(answer.headers && answer.headers['x-cache'], 'HIT', `request ${i + 1} was answered from the cache: ${answer.text}`);
    // The upstream's one write holds the headers, the ten declared bytes and the ten past them:
    // svr sees the error before it sends anything, and closes the client's connection instead of
    // passing on a response the upstream did not mean.
    assert.ok(answer.error, `request ${i + 1}: the client got a whole response: ${answer.status} ${JSON.stringify(answer.text)}`);
  }
  assert.equal(asked, 3, 'every request went to the upstream');
  const metrics = (await request(`${server.url}/metrics`, { agent })).text;
  assert.equal(metricValue(metrics, 'svr_proxy_cache_stores_total'), 0, 'nothing was stored');
  assert.equal(metricValue(metrics, 'svr_proxy_cache_entries'), 0);
});

test('a revalidation\'s 304 followed by stray bytes: answered from the entry, the worker unharmed', async (t) => {
  const net = require('node:net');
  let asked = 0;
  const upstream = net.createServer((socket) => socket.on('data', () => { // a request per read
    asked++;
    if (asked === 1) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nETag: "v1"\r\nCache-Control: max-age=1\r\n\r\nv1');
    else socket.write('HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nCache-Control: max-age=1\r\n\r\nSTRAY BYTES');
  }));
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t.after(() => upstream.close());
  const server = await startServer({ config: { workers: 1, stateDirectory: 'state', proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${upstream.address().port}`], cache: true }] } });
  t.after(() => server.stop());
  const agent = new http.Agent({ keepAlive: false });
  assert.equal((await request(`${server.url}/r`, { agent })).text, 'v1');
  // max-age=1: the lifetime ends with the clock, so the test waits for it.
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const revalidated = await request(`${server.url}/r`, { agent });
  assert.deepEqual([revalidated.status, revalidated.headers['x-cache'], revalidated.text], [200, 'REVALIDATED', 'v1']);
  assert.equal((await request(`${server.url}/r`, { agent })).text, 'v1', 'the worker still answers');
  assert.ok(!server.stderr().some((line) => /uncaught|recycl/i.test(line)), server.stderr().join('\n'));
});

test('proxyCache.setCookie "strip": stored without the cookie, which only the fetching client gets', async (t) => {
  const { get, stored } = await setUp(t, { proxyCache: { setCookie: 'strip' } });
  const first = await get('/set-cookie');
  assert.deepEqual([first.headers['x-cache'], first.headers['set-cookie']], ['MISS', ['session=1']]);
  await stored(1);
  const hit = await get('/set-cookie');
  assert.deepEqual([hit.headers['x-cache'], hit.headers['set-cookie'], hit.text], ['HIT', undefined, 'set-cookie 1']);
});

test('behind a trusted proxy, the X-Forwarded-Host and X-Forwarded-Proto it sends are part of the key', async (t) => {
  const { get, stored } = await setUp(t, { extra: { trustedProxies: ['127.0.0.1', '::1'] } });
  const viaA = await get('/reflect', { 'x-forwarded-host': 'a.example' });
  assert.deepEqual([viaA.headers['x-cache'], viaA.text.split(' ')[1]], ['MISS', 'a.example']);
  await stored(1);
  const plain = await get('/reflect');
  assert.equal(plain.headers['x-cache'], 'MISS', 'another forwarded host, another entry');
  assert.doesNotMatch(plain.text, /a\.example/);
  await stored(2);
  assert.equal((await get('/reflect', { 'x-forwarded-host': 'a.example' })).text, viaA.text);
  const viaHttps = await get('/reflect', { 'x-forwarded-host': 'a.example', 'x-forwarded-proto': 'https' });
  assert.equal(viaHttps.headers['x-cache'], 'MISS', 'another forwarded scheme, another entry');
  assert.notEqual(viaHttps.text, viaA.text);
});

test('another Host and another query each get their own entry', async (t) => {
  const { upstream, get, stored } = await setUp(t);
  const a = await get('/reflect', { host: 'a.example' });
  assert.deepEqual([a.headers['x-cache'], a.text], ['MISS', 'host a.example url /reflect 1']);
  await stored(1);
  assert.equal((await get('/reflect', { host: 'a.example' })).headers['x-cache'], 'HIT');
  const b = await get('/reflect', { host: 'b.example' });
  assert.deepEqual([b.headers['x-cache'], b.text], ['MISS', 'host b.example url /reflect 2'], 'another Host, another entry');
  await stored(2);
  const query = await get('/reflect?page=2', { host: 'a.example' });
  assert.deepEqual([query.headers['x-cache'], query.text], ['MISS', 'host a.example url /reflect?page=2 3'], 'another query, another entry');
  await stored(3);
  assert.equal(upstream.count('/reflect'), 3, 'the upstream was asked for each');
  for (const [host, p, text] of [['a.example', '/reflect', a.text], ['b.example', '/reflect', b.text], ['a.example', '/reflect?page=2', query.text]]) {
    const hit = await get(p, { host });
    assert.deepEqual([hit.headers['x-cache'], hit.text], ['HIT', text], `${host}${p} from its own entry`);
  }
});

test('a huge response streams through unstored; the directory stays within maxBytes', async (t) => {
  // A file left in the cache's folder from before (the web root is <dir>/web): emptied at start.
  const { get, entries, cacheDir, server } = await setUp(t, {
    proxyCache: { maxEntryBytes: 1024 * 1024, maxBytes: 100 * 1024 },
    files: { '../state/proxy-cache/left-over/entry': 'z'.repeat(200 * 1024) },
  });
  assert.ok(!fs.existsSync(path.join(cacheDir, 'left-over')), 'what an earlier run left is gone');
  const huge = await request(`${server.url}/huge`);
  assert.equal(huge.status, 200);
  assert.equal(huge.body.length, HUGE_BYTES, 'the client gets every byte');
  assert.equal(huge.headers['x-cache'], 'MISS');
  assert.equal((await get('/huge')).headers['x-cache'], 'MISS', 'never stored');
  assert.equal(await entries(), 0);
  assert.ok(directoryBytes(cacheDir) < 100 * 1024, 'nothing of it on disk');
  // Ten 30 KiB responses against a bound of 100 KiB: the oldest go. (A file being written is on
  // disk before the primary hears of it, so the check waits until it has heard of all ten.)
  for (let i = 0; i < 10; i++) assert.equal((await get(`/sized/${i}`)).status, 200);
  const storesSoFar = async () => metricValue((await request(`${server.url}/metrics`)).text, 'svr_proxy_cache_stores_total');
  for (let i = 0; i < 200 && (await storesSoFar()) < 10; i++);
  assert.equal(await storesSoFar(), 10);
  await waitUntil(() => directoryBytes(cacheDir) <= 100 * 1024 + 10 * 1024, 5000);
  const listing = () => fs.readdirSync(cacheDir, { recursive: true }).map((name) => `${name} ${fs.statSync(path.join(cacheDir, name)).size}`).join('\n');
  assert.ok(directoryBytes(cacheDir) <= 100 * 1024 + 10 * 1024, `${directoryBytes(cacheDir)} bytes on disk (bound 100 KiB, plus the small vary lists):\n${listing()}`);
  assert.ok(await entries() <= 3);
  assert.equal((await get('/sized/9')).headers['x-cache'], 'HIT', 'the newest is kept');
  assert.equal((await get('/sized/0')).headers['x-cache'], 'MISS', 'the oldest was removed');
});

test('a worker holds at most 8 x maxEntryBytes of bodies being stored: past it a response streams through unstored', async (t) => {
  const { upstream, server, entries } = await setUp(t, { workers: 1, proxyCache: { maxEntryBytes: 64 * 1024 } });
  // Nine 60 KiB responses in flight at once against 8 x 64 KiB: eight are stored, one is not.
  // The upstream ends them only once every client has its first 60 KiB (so svr holds all nine).
  const lengths = await new Promise((resolve, reject) => {
    const done = [];
    let started = 0;
    for (let i = 0; i < 9; i++) {
      http.get(`${server.url}/held/${i}`, (res) => {
        let length = 0;
        res.on('data', (chunk) => {
          const before = length;
          length += chunk.length;
          if (before < 60 * 1024 && length >= 60 * 1024 && ++started === 9) upstream.releaseHeld();
        });
        res.on('end', () => { done.push(length); if (done.length === 9) resolve(done); });
      }).on('error', reject);
    }
  });
  assert.deepEqual(lengths, Array(9).fill(60 * 1024 + 1), 'every client gets its whole answer');
  let count = await entries();
  for (let i = 0; i < 200 && count < 8; i++) count = await entries();
  assert.equal(count, 8);
});

test('revalidation, stale-while-revalidate, stale-if-error, one upstream request for concurrent misses, PURGE, metrics', async (t) => {
  const { upstream, server, get, stored } = await setUp(t, { extra: { trustedProxies: ['127.0.0.1', '::1'] }, proxyCache: { purgeFrom: ['192.0.2.1'] } });
  assert.equal((await get('/short')).headers['x-cache'], 'MISS');
  assert.equal((await get('/no-cache')).headers['x-cache'], 'MISS');
  assert.equal((await get('/swr')).text, 'swr 1');
  assert.equal((await get('/sie')).text, 'sie 1');
  assert.equal((await get('/plain-short')).text, 'plain-short 1');
  assert.equal((await get('/tagged')).text, 'tagged 1');
  await stored(6);
  // /tagged lives 60 s: on a loaded machine /short's one second can be over by now.
  const notModified = await get('/tagged', { 'if-none-match': '"t1"' });
  assert.deepEqual([notModified.status, notModified.headers['x-cache']], [304, 'HIT'], 'the client\'s own validator matches the stored one');
  const noCache = await get('/no-cache');
  assert.deepEqual([noCache.headers['x-cache'], noCache.text], ['REVALIDATED', 'no-cache 1'], 'no-cache: asked every time, the body kept');
  assert.equal(upstream.seen.get('/no-cache')[1]['if-none-match'], '"nc"');
  // max-age=1: these lifetimes end with the clock, so the test waits for it.
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const revalidated = await get('/short');
  assert.deepEqual([revalidated.headers['x-cache'], revalidated.text], ['REVALIDATED', 'short 1']);
  const stale = await get('/swr');
  assert.deepEqual([stale.headers['x-cache'], stale.text], ['STALE', 'swr 1'], 'answered at once from the cache');
  assert.ok(await waitUntil(() => upstream.count('/swr') === 2, 5000), 'and refreshed behind');
  const expired = await get('/plain-short');
  assert.deepEqual([expired.headers['x-cache'], expired.text], ['EXPIRED', 'plain-short 2'], 'no validator: fetched again');

  // Concurrent misses over both workers: one upstream request (the others wait for it).
  const slow = await Promise.all(Array.from({ length: 10 }, () => get('/slow')));
  assert.deepEqual(new Set(slow.map((a) => a.text)), new Set(['slow 1']));
  assert.equal(upstream.count('/slow'), 1, '10 concurrent misses over 2 workers, one upstream request');
  assert.deepEqual(new Set(slow.map((a) => a.headers['x-cache'])), new Set(['MISS', 'HIT']));

  // PURGE: only from purgeFrom (here a client behind the trusted proxy).
  assert.equal((await request(`${server.url}/short`, { method: 'PURGE' })).status, 403);
  const purged = await request(`${server.url}/short`, { method: 'PURGE', headers: { 'x-forwarded-for': '192.0.2.1' } });
  assert.deepEqual([purged.status, purged.text], [200, 'purged\n']);
  assert.equal((await get('/short')).headers['x-cache'], 'MISS');
  assert.equal((await request(`${server.url}/nothing-here`, { method: 'PURGE', headers: { 'x-forwarded-for': '192.0.2.1' } })).status, 404);

  // stale-if-error: the upstream is gone, the stale answer stands in.
  await new Promise((resolve) => upstream.server.close(resolve));
  upstream.server.closeAllConnections();
  const fallback = await get('/sie');
  assert.deepEqual([fallback.status, fallback.headers['x-cache'], fallback.text], [200, 'STALE', 'sie 1']);
  assert.equal((await get('/public')).status, 502, 'nothing stored to stand in: the error page');

  const metrics = (await request(`${server.url}/metrics`)).text;
  for (const status of ['MISS', 'REVALIDATED', 'STALE']) assert.ok(metricValue(metrics, `svr_proxy_cache_requests_total{status="${status}"}`) >= 1, status);
  assert.ok(metricValue(metrics, 'svr_proxy_cache_served_bytes_total') > 0);
});

test('a client that leaves before the upstream answers does not leave the next miss waiting', async (t) => {
  const { upstream, server } = await setUp(t, { workers: 1 });
  // The upstream never answers the first request; its client leaves once the request is upstream,
  // before any response header. (No clock decides the order: a client leaving on a timer could be
  // late on a loaded machine, after the answer was stored.)
  const first = http.get(`${server.url}/first-unanswered`);
  first.on('error', () => {}); // its own destroy below
  const firstGone = new Promise((resolve) => first.once('close', resolve));
  assert.ok(await waitUntil(() => upstream.count('/first-unanswered') === 1, 5000), 'the first request reached the upstream');
  first.destroy();
  await firstGone;
  assert.ok(await waitUntil(() => upstream.abandoned() === 1, 5000), 'svr closed its upstream request when its client left');
  const next = await request(`${server.url}/first-unanswered`, { timeout: 5000 });
  assert.equal(next.status, 200, 'answered, not left waiting on the first fetch');
  assert.deepEqual([next.headers['x-cache'], next.text], ['MISS', 'first-unanswered 2']);
});

test('--single-threaded: stored, answered and purged in the one process', async (t) => {
  const upstream = await startUpstream();
  t.after(() => upstream.server.close());
  const server = await startServer({
    config: { stateDirectory: 'state', proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${upstream.port}`], cache: true }] },
    args: ['--single-threaded'],
  });
  t.after(() => server.stop());
  const get = () => request(`${server.url}/public`).then((res) => `${res.headers['x-cache']} ${res.text}`);
  assert.equal(await get(), 'MISS public 1');
  assert.ok(await waitUntil(() => fs.existsSync(path.join(server.dir, 'state', 'proxy-cache')) && fs.readdirSync(path.join(server.dir, 'state', 'proxy-cache')).length === 1, 5000));
  assert.equal(await get(), 'HIT public 1');
  assert.equal((await request(`${server.url}/public`, { method: 'PURGE' })).status, 200);
  assert.equal(await get(), 'MISS public 2');
});

test('HTTP/2 clients: stored, answered from the cache, and 304 to their own validator', async (t) => {
  const { startTlsServer, h2Request } = require('../support/tls-helpers');
  const upstream = await startUpstream();
  t.after(() => upstream.server.close());
  const server = await startTlsServer({
    config: { enableHTTP2: true, proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${upstream.port}`], cache: true }] },
  });
  t.after(() => server.stop());
  const first = await h2Request(server.httpsUrl, '/tagged');
  assert.deepEqual([first.status, first.headers['x-cache'], first.text], [200, 'MISS', 'tagged 1']);
  let hit;
  for (let i = 0; i < 100 && !(hit && hit.headers['x-cache'] === 'HIT'); i++) hit = await h2Request(server.httpsUrl, '/tagged');
  assert.deepEqual([hit.status, hit.headers['x-cache'], hit.headers.etag, hit.text], [200, 'HIT', '"t1"', 'tagged 1']);
  const notModified = await h2Request(server.httpsUrl, '/tagged', { headers: { 'if-none-match': '"t1"' } });
  assert.deepEqual([notModified.status, notModified.headers['x-cache']], [304, 'HIT']);
  assert.equal(upstream.count('/tagged'), 1);
});
