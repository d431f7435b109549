'use strict';
// The gateway's safety, against a FastCGI server that reports exactly which script it was asked
// to run (test/support/fake-fastcgi.js): nothing outside the web root or hidden by the path policy
// ever runs, the pathinfo upload hole stays shut, a gateway extension's source is never sent, and
// a dead, silent or slow FastCGI server costs a 502/504 page, never a stuck request or a socket.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { startPipeline } = require('../support/pipeline');
const { startFakeFastcgi } = require('../support/fake-fastcgi');
const { makeTempDir, request, waitUntil } = require('../support/helpers');

const SOURCE = '<?php echo "SECRET SOURCE"; ?>';

// A FastCGI server answering every request with the script it was asked for.
async function echoServer(dir, { delay = 0 } = {}) {
  return startFakeFastcgi(dir, (r) => {
    const answer = () => {
      r.write(`Content-Type: text/plain\r\n\r\nran ${r.params.SCRIPT_FILENAME} info=[${r.params.PATH_INFO}]`);
      r.end();
    };
    if (delay) setTimeout(answer, delay);
    else answer();
  });
}

async function withSite(t, gateway, files, extra = {}) {
  const dir = makeTempDir();
  const fcgi = await echoServer(dir);
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, ...gateway }], ...extra }, files });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  return { site, fcgi };
}

function ranScripts(fcgi) {
  return fcgi.requests.map((p) => p.SCRIPT_FILENAME);
}

test('a .php file runs; its source is never sent, whatever the case of its extension or where it lies', async (t) => {
  const { site, fcgi } = await withSite(t, { path: '/app/' }, {
    'app/index.php': SOURCE, 'app/UPPER.PHP': SOURCE, 'elsewhere/x.php': SOURCE, 'note.txt': 'plain',
  });
  const ran = await request(`${site.url}/app/index.php`);
  assert.equal(ran.status, 200);
  assert.equal(ran.text, `ran ${path.join(site.root, 'app/index.php')} info=[]`);
  const upper = await request(`${site.url}/app/UPPER.PHP`);
  assert.equal(upper.text, `ran ${path.join(site.root, 'app/UPPER.PHP')} info=[]`);
  for (const url of ['/elsewhere/x.php', '/elsewhere/X.Php']) { // no rule takes /elsewhere/
    const res = await request(site.url + url);
    assert.equal(res.status, 404, url);
    assert.ok(!res.text.includes('SECRET SOURCE'), url);
  }
  assert.equal((await request(`${site.url}/note.txt`)).text, 'plain', 'other files are still served');
  assert.deepEqual(ranScripts(fcgi), [path.join(site.root, 'app/index.php'), path.join(site.root, 'app/UPPER.PHP')]);
});

test('/uploads/avatar.jpg/x.php never runs avatar.jpg (the cgi.fix_pathinfo hole)', async (t) => {
  const files = { 'uploads/avatar.jpg': SOURCE, 'uploads/ok.php': SOURCE };
  const off = await withSite(t, { frontController: null }, files);
  for (const url of ['/uploads/avatar.jpg/x.php', '/uploads/avatar.jpg/.php', '/uploads/avatar.jpg%2fx.php', '/uploads/avatar.jpg/x.php/y']) {
    let res = await request(off.site.url + url);
    if (res.status === 301) res = await request(off.site.url + res.headers.location); // %2f: to the clean URL first
    assert.equal(res.status, 404, url);
    assert.ok(!res.text.includes('SECRET SOURCE'), url);
  }
  assert.deepEqual(ranScripts(off.fcgi), [], 'nothing ran');
  // With the front controller, such a path goes to index.php (the application answers its 404).
  const on = await withSite(t, {}, { ...files, 'index.php': SOURCE });
  const res = await request(`${on.site.url}/uploads/avatar.jpg/x.php`);
  assert.equal(res.text, `ran ${path.join(on.site.root, 'index.php')} info=[]`);
  // PATH_INFO is what follows the first .php segment that is a file.
  const info = await request(`${on.site.url}/uploads/ok.php/a/b`);
  assert.equal(info.text, `ran ${path.join(on.site.root, 'uploads/ok.php')} info=[/a/b]`);
});

// A path runs a script only where a segment ending in .php is a file (a .php folder is a folder).
test('a directory named like a script is a directory: its files are served, its scripts run', async (t) => {
  const files = {
    'vendor/lib.php/readme.txt': 'readme', 'assets.php/style.css': 'css', 'assets.php/run.php': SOURCE,
    'site.php/index.php': SOURCE, 'index.php': SOURCE,
  };
  const { site, fcgi } = await withSite(t, {}, files);
  assert.equal((await request(`${site.url}/vendor/lib.php/readme.txt`)).text, 'readme');
  assert.equal((await request(`${site.url}/assets.php/style.css`)).text, 'css');
  assert.equal((await request(`${site.url}/assets.php/run.php/a`)).text, `ran ${path.join(site.root, 'assets.php/run.php')} info=[/a]`);
  assert.equal((await request(`${site.url}/site.php/`)).text, `ran ${path.join(site.root, 'site.php/index.php')} info=[]`, 'its index.php');
  for (const url of ['/assets.php/missing.css', '/assets.php/missing.php']) {
    assert.equal((await request(site.url + url)).text, `ran ${path.join(site.root, 'index.php')} info=[]`, `${url}: the front controller, as for any path that names nothing`);
  }
  const bare = await request(`${site.url}/assets.php`);
  assert.equal(bare.status, 404, 'the directory without its slash ends in .php: no script, and no redirect to the slash');
  assert.ok(!bare.text.includes('SECRET SOURCE'));
  assert.deepEqual(ranScripts(fcgi), ['assets.php/run.php', 'site.php/index.php', 'index.php', 'index.php'].map((name) => path.join(site.root, name)));
  // Without a front controller: the same files, and 404 for what is not there.
  const off = await withSite(t, { frontController: null }, { ...files, '.hidden.php/x.txt': 'hidden' });
  assert.equal((await request(`${off.site.url}/assets.php/style.css`)).text, 'css');
  for (const url of ['/assets.php/missing.css', '/assets.php/missing.php', '/.hidden.php/x.txt']) {
    const res = await request(off.site.url + url);
    assert.equal(res.status, 404, url);
  }
  assert.deepEqual(ranScripts(off.fcgi), []);
});

test('nothing outside the web root runs: .., encoded .., symbolic links out of it', async (t) => {
  const { site, fcgi } = await withSite(t, { frontController: null }, { 'in.php': SOURCE, '../outside.php': SOURCE, '../outdir/x.php': SOURCE });
  fs.symlinkSync(path.join(site.dir, 'outside.php'), path.join(site.root, 'link.php'));
  fs.symlinkSync(path.join(site.dir, 'outdir'), path.join(site.root, 'linkdir'));
  for (const url of ['/../outside.php', '/%2e%2e/outside.php', '/a/..%2f..%2foutside.php', '/link.php', '/linkdir/x.php', '/linkdir/']) {
    const res = await request(site.url + url);
    assert.ok(res.status === 404 || res.status === 403 || res.status === 400, `${url}: ${res.status}`);
    assert.ok(!res.text.includes('SECRET SOURCE'), url);
  }
  assert.deepEqual(ranScripts(fcgi), [], 'nothing ran');
});

test('with followSymlinks, a link inside the web root runs, a link out of it does not', async (t) => {
  const { site, fcgi } = await withSite(t, { frontController: null }, { 'in.php': SOURCE, '../outside.php': SOURCE }, { followSymlinks: true });
  fs.symlinkSync(path.join(site.dir, 'outside.php'), path.join(site.root, 'out.php'));
  fs.symlinkSync(path.join(site.root, 'in.php'), path.join(site.root, 'alias.php'));
  assert.equal((await request(`${site.url}/out.php`)).status, 404);
  assert.equal((await request(`${site.url}/alias.php`)).text, `ran ${path.join(site.root, 'in.php')} info=[]`, 'SCRIPT_FILENAME is the real path');
  assert.deepEqual(ranScripts(fcgi), [path.join(site.root, 'in.php')]);
});

test('dotfiles and the server\'s own files are refused as for static files', async (t) => {
  const { site, fcgi } = await withSite(t, { frontController: null }, {
    '.hidden.php': SOURCE, '.git/hook.php': SOURCE, 'state/x.php': SOURCE,
  }, { stateDirectory: 'web/state', allowSensitiveFilesInWebRoot: true });
  for (const url of ['/.hidden.php', '/.git/hook.php', '/state/x.php', '/.git/hook.php/x']) {
    const res = await request(site.url + url);
    assert.equal(res.status, 404, url);
    assert.ok(!res.text.includes('SECRET SOURCE'), url);
  }
  assert.deepEqual(ranScripts(fcgi), [], 'nothing ran');
});

test('index.php for a directory URL, the front controller for a path that names nothing', async (t) => {
  const { site } = await withSite(t, {}, { 'index.php': SOURCE, 'blog/index.php': SOURCE, 'blog/index.html': 'not this one', 'static/index.html': 'html index', 'a.css': 'css' });
  assert.equal((await request(`${site.url}/`)).text, `ran ${path.join(site.root, 'index.php')} info=[]`);
  assert.equal((await request(`${site.url}/blog/`)).text, `ran ${path.join(site.root, 'blog/index.php')} info=[]`);
  const bare = await request(`${site.url}/blog`);
  assert.equal(bare.status, 301, 'a directory without its slash is redirected first');
  assert.equal((await request(`${site.url}/static/`)).text, 'html index', 'no index.php: the static index');
  assert.equal((await request(`${site.url}/a.css`)).text, 'css');
  assert.equal((await request(`${site.url}/2026/11/a-post/?x=1`)).text, `ran ${path.join(site.root, 'index.php')} info=[]`);
});

test('a dead FastCGI server: 502 at once, over a Unix socket and over TCP', async (t) => {
  const dir = makeTempDir();
  const site = await startPipeline({ config: { fastcgi: [{ upstream: `unix:${path.join(dir, 'none.sock')}`, path: '/a/' }, { upstream: '127.0.0.1:1', path: '/b/' }] }, files: { 'a/x.php': SOURCE, 'b/x.php': SOURCE } });
  t.after(() => site.stop());
  for (const url of ['/a/x.php', '/b/x.php']) {
    const res = await request(site.url + url);
    assert.equal(res.status, 502, url);
    assert.ok(!res.text.includes('SECRET SOURCE'));
  }
  assert.ok(site.stderr().some((line) => /warn fastcgi unix:.*none\.sock: GET \/a\/x\.php: ENOENT; answering 502/.test(line)), site.stderr().join('\n'));
});

test('a silent FastCGI server: 504 after timeouts.firstByte, and its connection is closed', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, () => {}); // never answers
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, timeouts: { firstByte: 300 } }] }, files: { 'x.php': SOURCE } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const res = await request(`${site.url}/x.php`);
  assert.equal(res.status, 504);
  assert.ok(await waitUntil(() => fcgi.open() === 0, 5000), 'the upstream connection was closed');
  assert.ok(site.stderr().some((line) => /no output within 300 ms; answering 504/.test(line)));
});

// With requestBuffering false the body streams to PHP as it arrives: a client that stops sending
// holds its PHP request, and so a PHP child, until timeouts.firstByte (buffered bodies:
// gateway-request-buffering.test.js).
test('with requestBuffering false, a client that stops sending its body: 504 at timeouts.firstByte, the PHP request given up', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => { r.write('Content-Type: text/plain\r\n\r\nran'); r.end(); });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, requestBuffering: false, timeouts: { firstByte: 300 } }] }, files: { 'x.php': SOURCE } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const answer = await new Promise((resolve) => {
    const socket = net.connect(site.port, '127.0.0.1', () => socket.write('POST /x.php HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789'));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { text += chunk; if (text.includes('\r\n\r\n')) { socket.destroy(); resolve(text); } });
  });
  assert.match(answer, /^HTTP\/1\.1 504 /);
  assert.equal(fcgi.requests.length, 0, 'PHP never had the whole request to answer');
  assert.ok(await waitUntil(() => fcgi.open() === 0, 5000), 'the upstream connection was closed');
});

test('a server that stops mid-response cuts the client\'s response; idle silence after the headers too', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    r.write('Content-Type: text/plain\r\n\r\npartial');
    if (r.params.SCRIPT_NAME === '/die.php') r.socket.destroy();
  });
  // A second, not less: on a loaded machine a stall before "partial" arrives would be an idle
  // upstream before the output (a 504), not the cut mid-response this test is about.
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, timeouts: { idle: 1000 } }] }, files: { 'die.php': SOURCE, 'hang.php': SOURCE } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  for (const url of ['/die.php', '/hang.php']) {
    await assert.rejects(request(site.url + url), /aborted|socket hang up|ECONNRESET/, url);
  }
  assert.ok(await waitUntil(() => fcgi.open() === 0, 5000), 'no upstream connection is left open');
});

test('an idle pooled connection is closed after timeouts.keepAlive', async (t) => {
  // A second, so that a loaded machine cannot close it before the first assertion looks.
  const { site, fcgi } = await withSite(t, { timeouts: { keepAlive: 1000 } }, { 'x.php': SOURCE });
  assert.equal((await request(`${site.url}/x.php`)).status, 200);
  assert.equal(fcgi.open(), 1, 'kept open after the request');
  assert.ok(await waitUntil(() => fcgi.open() === 0, 5000), 'closed once idle');
});

test('a connection that is not made within timeouts.connect: 502', async (t) => {
  // A listener that never accepts: once its queue is full, the kernel drops further SYNs, so a
  // connect hangs (a loopback address with no listener would refuse at once).
  const child = spawn(process.execPath, ['-e', `const s = require('net').createServer().listen(0, '127.0.0.1', 1, () => { console.log(s.address().port); const end = Date.now() + 60000; while (Date.now() < end); process.exit(); });`], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  const port = Number(await new Promise((resolve) => child.stdout.once('data', resolve)));
  const fillers = [];
  for (let i = 0; i < 8; i++) fillers.push(net.connect(port, '127.0.0.1').on('error', () => {}));
  t.after(() => { for (const f of fillers) f.destroy(); });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: `127.0.0.1:${port}`, timeouts: { connect: 300 } }] }, files: { 'x.php': SOURCE } });
  t.after(() => site.stop());
  const res = await request(`${site.url}/x.php`);
  assert.equal(res.status, 502);
  assert.ok(site.stderr().some((line) => /no connection within 300 ms|ETIMEDOUT/.test(line)), site.stderr().join('\n'));
});

test('idle connections kept by one worker hold a PHP-FPM with one child only for timeouts.keepAlive', async (t) => {
  // Two pipelines in one process stand for two workers; the server serves one connection at a
  // time, as PHP-FPM with pm.max_children = 1 does.
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => { r.write('Content-Type: text/plain\r\n\r\nok'); r.end(); }, { serial: true });
  // Were the idle connection never closed, the second worker's request would wait out firstByte
  // (a minute): the test's request gives up after 10 s and the test fails.
  const config = { fastcgi: [{ upstream: fcgi.upstream, timeouts: { keepAlive: 1000, firstByte: 60000 } }] };
  const first = await startPipeline({ config, files: { 'x.php': SOURCE } });
  const second = await startPipeline({ config, files: { 'x.php': SOURCE } });
  t.after(async () => { await first.stop(); await second.stop(); await fcgi.stop(); });
  assert.equal((await request(`${first.url}/x.php`)).text, 'ok');
  assert.equal(fcgi.open(), 1, 'the first worker keeps its connection');
  assert.equal((await request(`${second.url}/x.php`)).text, 'ok', 'the second worker is served once the idle connection closes');
  // keepAlive 0: no connection outlives its request.
  const none = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, timeouts: { keepAlive: 0 } }] }, files: { 'x.php': SOURCE } });
  t.after(() => none.stop());
  assert.equal((await request(`${none.url}/x.php`)).text, 'ok');
  assert.ok(await waitUntil(() => fcgi.open() === 0, 5000), 'closed after its request');
});

test('connections are kept alive, reused, and bounded by maxConnections', async (t) => {
  const dir = makeTempDir();
  let busy = 0;
  let busiest = 0;
  const fcgi = await startFakeFastcgi(dir, (r) => {
    busy++;
    busiest = Math.max(busiest, busy);
    setTimeout(() => { busy--; r.write('Content-Type: text/plain\r\n\r\nok'); r.end(); }, 20);
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, maxConnections: 2, timeouts: { keepAlive: 10000 } }] }, files: { 'x.php': SOURCE } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  for (let i = 0; i < 3; i++) assert.equal((await request(`${site.url}/x.php`)).text, 'ok');
  assert.equal(fcgi.accepted(), 1, 'one connection for three requests in turn');
  const agent = new http.Agent({ keepAlive: false, maxSockets: 20 });
  const all = await Promise.all(Array.from({ length: 20 }, () => request(`${site.url}/x.php`, { agent })));
  assert.deepEqual(all.map((r) => r.status), Array(20).fill(200));
  assert.ok(busiest <= 2, `at most 2 requests at the server at once (saw ${busiest})`);
  assert.ok(fcgi.accepted() <= 2, `at most 2 connections ever (saw ${fcgi.accepted()})`);
});

test('a client that goes away closes its upstream connection', async (t) => {
  const dir = makeTempDir();
  let arrived;
  const seen = new Promise((resolve) => { arrived = resolve; });
  const fcgi = await startFakeFastcgi(dir, () => arrived()); // never answers
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'x.php': SOURCE } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const req = http.get(`${site.url}/x.php`);
  req.on('error', () => {});
  await seen;
  assert.equal(fcgi.open(), 1);
  req.destroy();
  assert.ok(await waitUntil(() => fcgi.open() === 0, 5000), 'the upstream connection was closed');
});

test('a bad header block from the server is a 502, never its text', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    const replies = { '/noblank.php': 'just text, no header block', '/badline.php': 'Content-Type text/plain\r\n\r\nSECRET SOURCE', '/badstatus.php': 'Status: abc\r\n\r\nSECRET SOURCE' };
    r.write(replies[r.params.SCRIPT_NAME]);
    r.end();
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'noblank.php': '', 'badline.php': '', 'badstatus.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  for (const url of ['/noblank.php', '/badline.php', '/badstatus.php']) {
    const res = await request(site.url + url);
    assert.equal(res.status, 502, url);
    assert.ok(!res.text.includes('SECRET SOURCE') && !res.text.includes('just text'), url);
  }
});

// The status line and headers as the client reads them (http.request's statusMessage).
function getHead(url) {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, message: res.statusMessage, headers: res.headers }));
    }).on('error', reject);
  });
}

test('a control character in the Status reason or a header value: 502 Bad Gateway and one warning, HTAB allowed', async (t) => {
  const replies = {
    '/status.php': 'Status: 200 A\x01B\r\n\r\nSECRET',
    '/header.php': 'X-A: a\x01b\r\n\r\nSECRET',
    '/escape.php': 'X-A: \x1b[31mred\r\n\r\nSECRET',
    '/cr.php': 'X-A: a\rb\r\n\r\nSECRET',
    '/del.php': 'X-A: a\x7fb\r\n\r\nSECRET',
  };
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    r.write(replies[r.params.SCRIPT_NAME] || 'X-Tab: a\tb\r\n\r\nok');
    r.end();
  });
  const files = Object.fromEntries([...Object.keys(replies), '/tab.php'].map((url) => [url.slice(1), '']));
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  for (const url of Object.keys(replies)) {
    const since = site.stderr().length;
    const head = await getHead(site.url + url);
    assert.deepEqual([head.status, head.message], [502, 'Bad Gateway'], url);
    assert.equal(head.headers['x-a'], undefined, url);
    const logged = site.stderr().slice(since);
    assert.equal(logged.length, 1, `${url}: ${JSON.stringify(logged)}`);
    assert.match(logged[0], /^warn fastcgi unix:.*: GET \/\w+\.php: a control character in a header line: ".*"; answering 502$/, url);
    assert.doesNotMatch(logged[0], /[\x00-\x1f\x7f]/, `${url}: the line itself has no control character`);
  }
  const tab = await getHead(`${site.url}/tab.php`);
  assert.deepEqual([tab.status, tab.headers['x-tab']], [200, 'a\tb']);
});

test('Location: /path alone is a local redirect; with a Status it goes to the client', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    if (r.params.SCRIPT_NAME === '/local.php') r.write('Location: /target.txt?q=1\r\n\r\n');
    else if (r.params.SCRIPT_NAME === '/posted.php') r.write('Location: /next.php?z=1\r\n\r\n');
    else if (r.params.SCRIPT_NAME === '/loop.php') r.write('Location: /loop.php\r\n\r\n');
    else if (r.params.SCRIPT_NAME === '/chain.php') { // ?N: N more local redirects, then an answer
      const left = Number(r.params.QUERY_STRING);
      r.write(left > 0 ? `Location: /chain.php?${left - 1}\r\n\r\n` : 'Content-Type: text/plain\r\n\r\nend of the chain');
    } else if (r.params.SCRIPT_NAME === '/next.php') r.write(`Content-Type: text/plain\r\n\r\nnext ${r.params.REQUEST_METHOD} ${r.params.QUERY_STRING}`);
    else r.write('Status: 303 See Other\r\nLocation: /target.txt\r\n\r\n');
    r.end();
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'local.php': '', 'posted.php': '', 'next.php': '', 'loop.php': '', 'chain.php': '', 'client.php': '', 'target.txt': 'the target' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const local = await request(`${site.url}/local.php`);
  assert.equal(local.status, 200);
  assert.equal(local.text, 'the target');
  const posted = await request(`${site.url}/posted.php`, { method: 'POST', body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(posted.text, 'next GET z=1', 'the redirected request is a GET');
  const client = await request(`${site.url}/client.php`);
  assert.equal(client.status, 303);
  assert.equal(client.headers.location, '/target.txt');
  assert.equal((await request(`${site.url}/loop.php`)).status, 502, 'a redirect loop ends');
  // 10 local redirects in a row are followed to the end; the 11th is a 502.
  const ran = () => fcgi.requests.filter((p) => p.SCRIPT_NAME === '/chain.php').length;
  const ten = await request(`${site.url}/chain.php?10`);
  assert.deepEqual([ten.status, ten.text], [200, 'end of the chain']);
  assert.equal(ran(), 11, 'the script asked for and its 10 redirects');
  assert.equal((await request(`${site.url}/chain.php?11`)).status, 502);
  assert.equal(ran(), 11 + 11, 'the 11th redirect was not followed');
  await site.waitForLog(/warn gateway: \/chain\.php\?1: more than 10 local redirects; answering 502/);
  await site.waitForLog(/warn gateway: \/loop\.php: more than 10 local redirects; answering 502/);
});

test('SERVER_SOFTWARE names svr as the Server header does: its versions only with exposeServerVersion', async (t) => {
  const { versionString } = require('../../lib/product');
  for (const [exposeServerVersion, expected] of [[false, 'svr'], [true, versionString()]]) {
    const { site, fcgi } = await withSite(t, {}, { 'a.php': '' }, { exposeServerVersion });
    const res = await request(`${site.url}/a.php`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.server, expected, `exposeServerVersion ${exposeServerVersion}`);
    assert.equal(fcgi.requests[0].SERVER_SOFTWARE, expected, `exposeServerVersion ${exposeServerVersion}`);
  }
  assert.match(versionString(), /^svr\/\d+\.\d+\.\d+ \(/);
});

test('a local redirect meets the access rules of its path: a 403 or login rule holds', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    const to = { '/to-admin.php': '/admin/secret.txt', '/to-members.php': '/members/page.txt', '/to-open.php': '/open.txt' }[r.params.SCRIPT_NAME];
    r.write(`Location: ${to}\r\n\r\n`);
    r.end();
  });
  const site = await startPipeline({
    config: {
      fastcgi: [{ upstream: fcgi.upstream }],
      nonStandardCodes: [{ url: '/admin/secret.txt', scode: 403 }, { url: '/members/page.txt', scode: 401 }],
    },
    files: { 'to-admin.php': '', 'to-members.php': '', 'to-open.php': '', 'admin/secret.txt': 'adminsecret', 'members/page.txt': 'members only', 'open.txt': 'open' },
  });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  assert.equal((await request(`${site.url}/admin/secret.txt`)).status, 403, 'the rule itself');
  const admin = await request(`${site.url}/to-admin.php`);
  assert.equal(admin.status, 403);
  assert.ok(!admin.text.includes('adminsecret'));
  const members = await request(`${site.url}/to-members.php`);
  assert.equal(members.status, 401);
  assert.ok(!members.text.includes('members only'));
  assert.equal((await request(`${site.url}/to-open.php`)).text, 'open', 'a redirect to an open path is served');
});

test('a 256 MiB response streams with bounded memory (backpressure)', async (t) => {
  const TOTAL = 256 * 1024 * 1024;
  const dir = makeTempDir();
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const fcgi = await startFakeFastcgi(dir, (r) => {
    r.write('Content-Type: application/octet-stream\r\n\r\n');
    let sent = 0;
    const pump = () => {
      while (sent < TOTAL) {
        sent += chunk.length;
        if (!r.write(chunk)) return r.socket.once('drain', pump);
      }
      r.end();
    };
    pump();
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'big.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const before = process.memoryUsage().rss;
  let peak = before;
  const received = await new Promise((resolve, reject) => {
    http.get(`${site.url}/big.php`, (res) => {
      let bytes = 0;
      res.on('data', (c) => { bytes += c.length; peak = Math.max(peak, process.memoryUsage().rss); });
      res.on('end', () => resolve(bytes));
      res.on('error', reject);
    }).on('error', reject);
  });
  assert.equal(received, TOTAL);
  assert.ok(peak - before < 96 * 1024 * 1024, `memory grew by ${Math.round((peak - before) / 1048576)} MiB`);
});

test('a request body of unknown length (chunked) gets 411: scripts read CONTENT_LENGTH bytes', async (t) => {
  const { site, fcgi } = await withSite(t, {}, { 'x.php': SOURCE });
  const status = await new Promise((resolve, reject) => {
    const req = http.request(`${site.url}/x.php`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', reject);
    req.write('a=1');
    req.end('&b=2');
  });
  assert.equal(status, 411);
  assert.deepEqual(ranScripts(fcgi), []);
  const sized = await request(`${site.url}/x.php`, { method: 'POST', body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(sized.status, 200);
});

test('with virtual hosts, each host runs the scripts of its own web root', async (t) => {
  const dir = makeTempDir();
  const fcgi = await echoServer(dir);
  const site = await startPipeline({
    config: { wwwrootVHost: [{ host: 'a.example', wwwroot: 'a' }], fastcgi: [{ upstream: fcgi.upstream, frontController: null }] },
    files: { 'x.php': SOURCE, '../a/x.php': SOURCE, '../a/only-a.php': SOURCE },
  });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const a = fs.realpathSync(path.join(site.dir, 'a'));
  assert.equal((await request(`${site.url}/x.php`, { headers: { host: 'a.example' } })).text, `ran ${path.join(a, 'x.php')} info=[]`);
  assert.equal((await request(`${site.url}/x.php`)).text, `ran ${path.join(site.root, 'x.php')} info=[]`);
  assert.equal((await request(`${site.url}/only-a.php`)).status, 404, 'another host\'s script is not there');
});

test('a client slower than timeouts.idle is no idle upstream: the response arrives whole', async (t) => {
  const TOTAL = 8 * 1024 * 1024;
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    r.write('Content-Type: application/octet-stream\r\n\r\n');
    r.write(Buffer.alloc(TOTAL, 'y'));
    r.end();
  });
  // The idle limit is a second, not less: the fake server, svr and the client share this process,
  // and on a loaded machine a stall of a few hundred milliseconds before the first byte is a real
  // idle upstream to svr (a 504), not the slow client this test is about.
  const IDLE_MS = 1000;
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, timeouts: { idle: IDLE_MS } }] }, files: { 'slow.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const received = await new Promise((resolve, reject) => {
    http.get(`${site.url}/slow.php`, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}; log: ${site.stderr().join(' | ')}`));
      let bytes = 0;
      res.pause();
      // Hold the response unread for two and a half idle limits, then read it all.
      const resumeAt = setTimeout(() => res.resume(), IDLE_MS * 2.5);
      res.on('data', (c) => { bytes += c.length; });
      res.on('end', () => resolve(bytes));
      res.on('error', (error) => { clearTimeout(resumeAt); reject(error); });
      res.on('aborted', () => reject(new Error(`cut after ${bytes} bytes`)));
    }).on('error', reject);
  });
  assert.equal(received, TOTAL);
});

test('every 502 says why in the log', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => { r.write('Status: abc\r\n\r\n'); r.end(); });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'x.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  assert.equal((await request(`${site.url}/x.php`)).status, 502);
  await site.waitForLog(/warn fastcgi unix:.*: GET \/x\.php: an invalid Status: "abc"; answering 502/);
});

test('a FastCGI record for another request id: 502 before the output, the response cut after it', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    const other = r.id + 1;
    const name = r.params.SCRIPT_NAME;
    if (name === '/before.php') r.record(6, other, 'Content-Type: text/plain\r\n\r\nnot yours');
    if (name === '/stderr.php') r.record(7, other, 'not yours\n');
    if (name === '/management.php') r.record(11, 0, Buffer.from([200, 0, 0, 0, 0, 0, 0, 0])); // FCGI_UNKNOWN_TYPE
    r.write('Content-Type: text/plain\r\n\r\nmine');
    if (name === '/after.php') r.record(6, other, ' not yours');
    r.end();
  });
  // Connections kept a minute: one that closes was closed for its records.
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, timeouts: { keepAlive: 60000 } }] }, files: { 'before.php': '', 'stderr.php': '', 'after.php': '', 'management.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  for (const name of ['before', 'stderr']) {
    const res = await request(`${site.url}/${name}.php`);
    assert.equal(res.status, 502, name);
    assert.ok(!res.text.includes('not yours'), name);
    await site.waitForLog(new RegExp(`warn fastcgi unix:.*: GET /${name}\\.php: a FastCGI record for request id 2, not 1; answering 502`));
    assert.ok(await waitUntil(() => fcgi.open() === 0, 5000), `${name}: the connection is closed`);
  }
  await assert.rejects(request(`${site.url}/after.php`), /aborted|socket hang up|ECONNRESET/, 'after the output started');
  assert.ok(await waitUntil(() => fcgi.open() === 0, 5000), 'after: the connection is closed');
  assert.equal((await request(`${site.url}/management.php`)).text, 'mine', 'a management record (id 0) is passed over');
  assert.equal(fcgi.open(), 1, 'and its connection kept');
  assert.ok(!site.stderr().some((line) => line.includes('not yours')), 'nothing of another request reached the log');
});

// Only a kept-alive connection the server closed (nothing of the request taken) is worth a second
// try; a server that answered wrongly has run the script once already.
test('a bad record on a reused connection is a 502, the script not run a second time', async (t) => {
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    if (r.params.SCRIPT_NAME === '/bad.php') r.record(6, r.id + 1, 'not yours');
    r.write('Content-Type: text/plain\r\n\r\nok');
    r.end();
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, timeouts: { keepAlive: 60000 } }] }, files: { 'ok.php': '', 'bad.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  assert.equal((await request(`${site.url}/ok.php`)).text, 'ok');
  assert.equal(fcgi.open(), 1, 'the connection is kept for the next request');
  assert.equal((await request(`${site.url}/bad.php`)).status, 502);
  assert.equal(fcgi.accepted(), 1, 'no second connection was made for a retry');
  assert.deepEqual(fcgi.requests.map((p) => p.SCRIPT_NAME), ['/ok.php', '/bad.php']);
});

test('FastCGI stderr cannot pass for svr\'s own log lines: each line prefixed, control characters escaped', async (t) => {
  const forged = '2026-01-01T00:00:00.000Z error worker 1: forged';
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    r.stderr(`one\r${forged}\n\x1b[31mred\x1b[0m\n${forged}\r\nlast\x1b[0m`);
    r.write('Content-Type: text/plain\r\n\r\nok');
    r.end();
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'log.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const since = site.stderr().length;
  assert.equal((await request(`${site.url}/log.php`)).status, 200);
  await site.waitForLog(/: \/log\.php: last/, 'stderr', since); // the unfinished last line, at the script's end
  const prefix = /^error fastcgi unix:\S+: \/log\.php: /;
  const logged = site.stderr().slice(since).map((line) => {
    assert.match(line, prefix);
    assert.doesNotMatch(line, /[\x00-\x08\x0a-\x1f\x7f-\x9f]/, JSON.stringify(line));
    return line.replace(prefix, '');
  });
  assert.deepEqual(logged, [`one\\x0d${forged}`, '\\x1b[31mred\\x1b[0m', forged, 'last\\x1b[0m']);
});

test('FastCGI stderr: a character split between two records reaches the log whole', async (t) => {
  const dir = makeTempDir();
  const message = Buffer.from('PHP message: café € 😀\n');
  const cut = message.indexOf(0xc3) + 1; // after the first byte of "é"
  const fcgi = await startFakeFastcgi(dir, (r) => {
    r.stderr(message.subarray(0, cut));
    r.stderr(message.subarray(cut));
    r.write('Content-Type: text/plain\r\n\r\nok');
    r.end();
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'log.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  assert.equal((await request(`${site.url}/log.php`)).text, 'ok');
  await site.waitForLog(/^error fastcgi unix:\S+: \/log\.php: PHP message: café € 😀$/);
});

test('FastCGI stderr: at most 64 KiB of it per request reaches the log, the rest is dropped', async (t) => {
  // 103 lines of 1000 bytes: the 64 KiB end after 65 of them and 536 bytes of the 66th.
  const lines = Array.from({ length: 103 }, (_, i) => `line ${String(i).padStart(4, '0')} ${'x'.repeat(989)}\n`);
  const dir = makeTempDir();
  const fcgi = await startFakeFastcgi(dir, (r) => {
    for (const line of lines) r.stderr(line);
    r.write('Content-Type: text/plain\r\n\r\nok');
    r.end();
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'flood.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const since = site.stderr().length;
  assert.equal((await request(`${site.url}/flood.php`)).text, 'ok');
  await site.waitForLog(/: \/flood\.php: line 0065 /, 'stderr', since); // the cut line, written at the script's end
  const prefix = /^error fastcgi unix:\S+: \/flood\.php: /;
  const logged = site.stderr().slice(since).filter((line) => prefix.test(line)).map((line) => line.replace(prefix, ''));
  assert.equal(logged.join('\n'), lines.join('').slice(0, 64 * 1024));
  assert.equal(logged.length, 66);
});

test('with requestBuffering false, a request body streams to the server as it arrives, never gathered first', { timeout: 30000 }, async (t) => {
  const HALF = 1024 * 1024;
  const dir = makeTempDir();
  let received = 0;
  let halfArrived;
  const arrived = new Promise((resolve) => { halfArrived = resolve; });
  const fcgi = await startFakeFastcgi(dir, (r) => {
    r.write(`Content-Type: text/plain\r\n\r\n${r.body.length}`);
    r.end();
  }, { onStdin: (length) => { received += length; if (received >= HALF / 2) halfArrived(); } });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, requestBuffering: false }] }, files: { 'upload.php': '' } });
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  const answer = new Promise((resolve, reject) => {
    const req = http.request(`${site.url}/upload.php`, { method: 'POST', headers: { 'content-length': 2 * HALF } }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.write(Buffer.alloc(HALF, 'a'));
    // The second half goes out only once the server has seen part of the first: a gateway that
    // gathered the body before sending it would wait here for ever.
    arrived.then(() => req.end(Buffer.alloc(HALF, 'b')));
  });
  assert.equal(await answer, String(2 * HALF));
});
