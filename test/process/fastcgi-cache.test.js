'use strict';
// The response cache on a `fastcgi` rule, with Debian's real PHP-FPM behind two svr workers:
// each PHP page counts its own runs in a file, so the test sees which requests reached PHP. A
// public page is run once and then answered from the cache by both workers; a page that starts
// a session (Set-Cookie) runs every time and each client keeps its own cookie; requests with a
// Cookie or Authorization, or an unkeyed override header, go to PHP; a stored page is revalidated
// with PHP (If-None-Match, 304); PURGE empties the entry.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { startServer, request, makeTempDir } = require('../support/helpers');
const { startPhpFpm, readableByAll } = require('../support/php-fpm');

// The run count of this script, kept in COUNT_DIR (a directory PHP-FPM's user may write).
const COUNT = '$f = getenv("COUNT_DIR") . "/" . basename(__FILE__); $n = (int) @file_get_contents($f) + 1; file_put_contents($f, $n);';
const SCRIPTS = {
  'public.php': `<?php ${COUNT} header("Cache-Control: public, max-age=60"); echo "public $n";`,
  // PHP's own session headers with the "public" cache limiter: a lifetime, and the client's cookie.
  'session.php': `<?php ${COUNT} session_save_path(getenv("COUNT_DIR")); session_cache_limiter("public"); session_start(); echo "session $n";`,
  'cookie.php': `<?php ${COUNT} header("Cache-Control: public, max-age=60"); setcookie("user", "u$n"); echo "cookie $n";`,
  'private.php': `<?php ${COUNT} header("Cache-Control: private, max-age=60"); echo "private $n";`,
  'plain.php': `<?php ${COUNT} echo "plain $n";`,
  // No lifetime, a second long; records how many of its runs were running at once (slow.max).
  'slow.php': `<?php $d = getenv("COUNT_DIR"); $lock = fopen("$d/slow.lock", "c+");
    $add = function ($by) use ($d, $lock) { flock($lock, LOCK_EX); $a = (int) @file_get_contents("$d/slow.active") + $by;
      file_put_contents("$d/slow.active", $a); file_put_contents("$d/slow.max", max($a, (int) @file_get_contents("$d/slow.max"))); flock($lock, LOCK_UN); };
    $add(1); usleep(1000000); $add(-1); echo "slow";`,
  // Stored, and revalidated on every use: PHP answers 304 to the ETag svr sends for it.
  'match.php': `<?php ${COUNT} header('ETag: "m1"'); header("Cache-Control: public, max-age=60"); header("Vary: Accept-Language"); echo "match $n";`,
  'tagged.php': `<?php ${COUNT} header('ETag: "v1"'); header("Cache-Control: no-cache");
    if (($_SERVER["HTTP_IF_NONE_MATCH"] ?? "") === '"v1"') { http_response_code(304); exit; } echo "tagged $n";`,
};

function metricValue(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

async function setUp(t, extra = {}) {
  const fpm = await startPhpFpm();
  if (fpm.skip) return { skip: fpm.skip };
  t.after(() => fpm.stop());
  const counts = makeTempDir('svr-php-counts-');
  fs.chmodSync(counts, 0o777);
  const server = await startServer({
    config: {
      workers: 2, schedulingPolicy: 'rr', metrics: { path: '/metrics', onSitePort: true }, stateDirectory: 'state',
      fastcgi: [{ upstream: fpm.upstream, frontController: null, cache: true, env: { COUNT_DIR: counts } }], ...extra,
    },
    files: SCRIPTS,
  });
  t.after(() => server.stop());
  readableByAll(server.dir, server.root);
  const runs = (script) => Number(fs.readFileSync(path.join(counts, script), 'utf8'));
  const agent = new http.Agent({ keepAlive: false }); // a fresh connection each: both workers answer
  const get = (p, headers = {}, method = 'GET') => request(`${server.url}${p}`, { agent, headers, method });
  const entries = async () => metricValue((await request(`${server.url}/metrics`)).text, 'svr_proxy_cache_entries');
  // A MISS is stored just after its answer ends: ask the metrics until the primary has heard of it.
  const stored = async (n) => {
    let count = await entries();
    for (let i = 0; i < 200 && count < n; i++) count = await entries();
    assert.ok(count >= n, `${n} entries stored (${count})`);
  };
  return { server, runs, get, stored };
}

test('a public PHP page runs once and is then answered from the cache by every worker', async (t) => {
  const { skip, server, runs, get, stored } = await setUp(t);
  if (skip) return t.skip(skip);
  const first = await get('/public.php');
  assert.deepEqual([first.status, first.headers['x-cache'], first.text], [200, 'MISS', 'public 1']);
  await stored(1);
  for (let i = 0; i < 6; i++) {
    const hit = await get('/public.php');
    assert.deepEqual([hit.status, hit.headers['x-cache'], hit.text], [200, 'HIT', 'public 1']);
    assert.equal(hit.headers['cache-control'], 'public, max-age=60');
  }
  const head = await get('/public.php', {}, 'HEAD');
  assert.deepEqual([head.headers['x-cache'], head.headers['content-length'], head.body.length], ['HIT', '8', 0], 'a HEAD from the stored GET');
  assert.equal(runs('public.php'), 1, 'PHP ran once for eight requests over two workers');
  await server.waitForLog(/"GET \/public\.php HTTP\/1\.1" 200 8 "-" "-" \d+\.\d{3} HIT$/, 'stdout');

  // Neither a page without a lifetime nor a private one is stored.
  for (const script of ['plain', 'private']) {
    for (let i = 1; i <= 2; i++) {
      const answer = await get(`/${script}.php`);
      assert.deepEqual([answer.headers['x-cache'], answer.text], ['MISS', `${script} ${i}`]);
    }
  }
  const metrics = (await request(`${server.url}/metrics`)).text;
  assert.ok(metricValue(metrics, 'svr_proxy_cache_requests_total{status="HIT"}') >= 7);
  assert.ok(metricValue(metrics, 'svr_proxy_cache_served_bytes_total') >= 48);
  return undefined;
});

test('sessions and cookies are never shared: Set-Cookie is not stored, a Cookie or Authorization bypasses', async (t) => {
  const { skip, runs, get, stored } = await setUp(t);
  if (skip) return t.skip(skip);
  const alice = await get('/session.php');
  const bob = await get('/session.php');
  assert.match(alice.headers['cache-control'], /max-age=\d+/, 'PHP gave the page a lifetime');
  const sessionOf = (answer) => /PHPSESSID=([^;]+)/.exec([].concat(answer.headers['set-cookie']).join(';'))[1];
  assert.notEqual(sessionOf(alice), sessionOf(bob), 'each client got its own session');
  assert.deepEqual([alice.headers['x-cache'], bob.headers['x-cache'], bob.text], ['MISS', 'MISS', 'session 2']);
  assert.equal((await get('/cookie.php')).headers['set-cookie'][0], 'user=u1');
  assert.equal((await get('/cookie.php')).headers['set-cookie'][0], 'user=u2', 'a cookie-setting page runs every time');

  await get('/public.php');
  await stored(1);
  for (const headers of [{ cookie: 'PHPSESSID=abc' }, { authorization: 'Basic YTpi' }, { 'x-original-url': '/admin' }]) {
    const answer = await get('/public.php', headers);
    assert.equal(answer.headers['x-cache'], 'BYPASS', Object.keys(headers)[0]);
  }
  assert.equal(runs('public.php'), 4, 'the three bypassing requests ran PHP');
  const clean = await get('/public.php');
  assert.deepEqual([clean.headers['x-cache'], clean.text], ['HIT', 'public 1'], 'and none of them replaced the stored page');
  return undefined;
});

test('PURGE empties a PHP page\'s entry; only from purgeFrom', async (t) => {
  const { skip, runs, get, stored } = await setUp(t, { trustedProxies: ['127.0.0.1', '::1'], proxyCache: { purgeFrom: ['192.0.2.1'] } });
  if (skip) return t.skip(skip);
  await get('/public.php');
  await stored(1);
  assert.equal((await get('/public.php')).headers['x-cache'], 'HIT');
  assert.equal((await get('/public.php', {}, 'PURGE')).status, 403, 'loopback is not in this purgeFrom');
  assert.equal((await get('/public.php')).headers['x-cache'], 'HIT', 'still stored');
  const purger = { 'x-forwarded-for': '192.0.2.1' };
  const purged = await get('/public.php', purger, 'PURGE');
  assert.deepEqual([purged.status, purged.text], [200, 'purged\n']);
  const after = await get('/public.php');
  assert.deepEqual([after.headers['x-cache'], after.text], ['MISS', 'public 2']);
  assert.equal(runs('public.php'), 2);
  assert.equal((await get('/plain.php', purger, 'PURGE')).status, 404, 'nothing stored');
  return undefined;
});

test('a no-cache page with an ETag is revalidated with PHP: its 304 is answered with the stored body', async (t) => {
  const { skip, runs, get, stored } = await setUp(t);
  if (skip) return t.skip(skip);
  const first = await get('/tagged.php');
  assert.deepEqual([first.headers['x-cache'], first.text], ['MISS', 'tagged 1']);
  await stored(1);
  for (let i = 0; i < 3; i++) {
    const again = await get('/tagged.php');
    assert.deepEqual([again.status, again.headers['x-cache'], again.text, again.headers.etag], [200, 'REVALIDATED', 'tagged 1', '"v1"']);
  }
  assert.equal(runs('tagged.php'), 4, 'PHP was asked each time, and answered 304 after the first');
  return undefined;
});

test('a failing If-Match gets 412 from a PHP page\'s miss (then not stored) and from its hit, with the page\'s Vary', async (t) => {
  const { skip, runs, get, stored } = await setUp(t);
  if (skip) return t.skip(skip);
  const missed = await get('/match.php', { 'if-match': '"other"' });
  assert.deepEqual([missed.status, missed.headers['x-cache']], [412, 'MISS']);
  assert.match(missed.headers.vary, /^Accept-Language, Accept$/, 'the page\'s Vary, and the error page\'s own');
  const first = await get('/match.php');
  assert.deepEqual([first.status, first.headers['x-cache'], first.text], [200, 'MISS', 'match 2'], 'the 412 left nothing stored');
  await stored(1);
  const hit = await get('/match.php', { 'if-match': '"other"' });
  assert.deepEqual([hit.status, hit.headers['x-cache']], [412, 'HIT']);
  assert.match(hit.headers.vary, /^Accept-Language, Accept$/, 'the stored page\'s Vary, and the error page\'s own');
  const matched = await get('/match.php', { 'if-match': '"m1"' });
  assert.deepEqual([matched.status, matched.headers['x-cache'], matched.text], [200, 'HIT', 'match 2']);
  assert.equal(runs('match.php'), 2, 'PHP ran for the two misses only');
  return undefined;
});

test('requests for a page that is never stored run side by side, not one after another under the lock', async (t) => {
  const { skip, runs, get } = await setUp(t);
  if (skip) return t.skip(skip);
  for (let i = 0; i < 2; i++) assert.equal((await get('/slow.php')).headers['x-cache'], 'MISS'); // both workers
  // As many as PHP-FPM has children: each worker sends its two at once, neither waits for the other.
  const answers = await Promise.all(Array.from({ length: 4 }, () => get('/slow.php')));
  assert.deepEqual(new Set(answers.map((a) => a.headers['x-cache'])), new Set(['MISS']));
  assert.equal(runs('slow.max'), 4, 'PHP ran all four at once');
  return undefined;
});
