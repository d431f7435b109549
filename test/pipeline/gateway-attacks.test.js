'use strict';
// An outsider's tries against the FastCGI gateway, over raw sockets where the framing is the
// point: a body smuggled with both Transfer-Encoding and Content-Length, or two Content-Lengths,
// is refused (400, or 501 when the Transfer-Encoding is one svr does not take) with the connection
// closed, and never reaches a script; a body is exactly its Content-Length, so a request hidden in it is
// answered as a request of its own (its own script, its own REQUEST_URI), never as part of the
// body; the path tricks (NUL, "..;", a trailing dot or space, another case) run nothing; and a
// header name PHP would read as another (X.Forwarded.For as X-Forwarded-For) reaches no script.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const path = require('node:path');
const { startPipeline } = require('../support/pipeline');
const { startFakeFastcgi } = require('../support/fake-fastcgi');
const { makeTempDir, request } = require('../support/helpers');

const SOURCE = '<?php echo "SECRET SOURCE"; ?>';

async function withSite(t, files) {
  const dir = makeTempDir();
  const bodies = [];
  const fcgi = await startFakeFastcgi(dir, (r) => {
    bodies.push([path.basename(r.params.SCRIPT_FILENAME), r.body.toString('latin1')]);
    r.write(`Content-Type: text/plain\r\n\r\nran ${r.params.SCRIPT_FILENAME} uri=${r.params.REQUEST_URI}`);
    r.end();
  });
  const site = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, frontController: null }] }, files, asWorker: true }); // as a worker listens: pipelining bounded
  t.after(async () => { await site.stop(); await fcgi.stop(); });
  return { site, fcgi, bodies };
}

// Writes raw bytes (the connection left open, as a client awaiting its answer does), reads until
// the server closes it or `until` matches what came back.
function raw(port, bytes, until) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    const timer = setTimeout(() => { socket.destroy(); resolve(text); }, 5000);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (until && until.test(text)) { clearTimeout(timer); socket.destroy(); resolve(text); }
    });
    socket.on('close', () => { clearTimeout(timer); resolve(text); });
    socket.on('error', (error) => { clearTimeout(timer); if (text) resolve(text); else reject(error); });
  });
}

const statuses = (text) => [...text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));

test('Transfer-Encoding with Content-Length, or two Content-Lengths: refused, the connection closed, no script runs', async (t) => {
  const { site, fcgi } = await withSite(t, { 'a.php': SOURCE, 'b.php': SOURCE });
  const smuggled = 'GET /b.php HTTP/1.1\r\nHost: x\r\n\r\n';
  const heads = [
    `POST /a.php HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
    `POST /a.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n${smuggled}`,
    `POST /a.php HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
    `POST /a.php HTTP/1.1\r\nHost: x\r\nContent-Length: 0, ${smuggled.length}\r\n\r\n${smuggled}`,
    `POST /a.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n${smuggled}`,
  ];
  for (const head of heads) {
    const answer = await raw(site.port, head); // resolves when svr closes the connection
    const what = `${JSON.stringify(head.split('\r\n\r\n')[0])}: ${answer.split('\r\n')[0]}`;
    const answered = statuses(answer);
    assert.equal(answered.length, 1, `one answer, none for the smuggled request: ${what}`);
    assert.ok(answered[0] === 400 || answered[0] === 501, what); // 501: a Transfer-Encoding svr does not take
    assert.match(answer, /\r\nConnection: close\r\n/i, what);
  }
  assert.deepEqual(fcgi.requests, [], 'neither a.php nor the smuggled b.php ran');
});

test('a body is exactly its Content-Length: what follows is a request of its own', async (t) => {
  const { site, fcgi, bodies } = await withSite(t, { 'a.php': SOURCE, 'b.php': SOURCE });
  const answer = await raw(site.port,
    'POST /a.php HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /b.php?q HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    /uri=\/b\.php\?q/);
  assert.deepEqual(statuses(answer), [200, 200]);
  assert.match(answer, /uri=\/a\.php[^]*uri=\/b\.php\?q/, 'the answers in the order asked');
  // A POST runs alone (lib/net/pipelining.js): b.php reaches the FastCGI server after a.php.
  assert.deepEqual(bodies, [['a.php', 'abc'], ['b.php', '']]);
  assert.deepEqual(fcgi.requests.map((p) => [path.basename(p.SCRIPT_FILENAME), p.REQUEST_URI]), [['a.php', '/a.php'], ['b.php', '/b.php?q']]);
});

test('path tricks run nothing and send no source: NUL, "..;", trailing dot or space, case, encoded slash', async (t) => {
  const { site, fcgi } = await withSite(t, { 'app/a.php': SOURCE, 'secret/s.php': SOURCE });
  const expected = {
    '/app/a.php%00.txt': 400,
    '/app/a.php%00': 400,
    '/app/..;/secret/s.php': 404,
    '/app/a.php.': 404,
    '/app/a.php%20': 404,
    '/app/a.php%2e': 404,
    '/APP/a.php': 404,
    '/app/A.php': 404,
    '/app/a.php::$DATA': 404,
  };
  for (const [url, status] of Object.entries(expected)) {
    const res = await request(site.url + url);
    assert.equal(res.status, status, url);
    assert.ok(!res.text.includes('SECRET SOURCE'), url);
  }
  assert.deepEqual(fcgi.requests, [], 'nothing ran');
  // An encoded slash is normalised first (301 to the clean path), then runs the one script it names.
  const encoded = await request(`${site.url}/app%2fa.php`);
  assert.equal(encoded.status, 301);
  assert.equal(encoded.headers.location, '/app/a.php');
});

test('header names with a character other than letters, digits and "-" reach no script: no X.Forwarded.For posing as HTTP_X_FORWARDED_FOR', async (t) => {
  const { site, fcgi } = await withSite(t, { 'a.php': SOURCE });
  // PHP turns "." into "_" in $_SERVER's names: X.Forwarded.For would be HTTP_X_FORWARDED_FOR there.
  const spoofed = ['X.Forwarded.For: 1.2.3.4', 'X-Real.IP: 1.2.3.4', 'X-Forwarded.Proto: https', 'X-Forwarded.Host: evil.example',
    'X_Forwarded_For: 1.2.3.4', 'X~Y: 1', "X!#$%&'*+^`|Z: 1"];
  const answer = await raw(site.port, `GET /a.php HTTP/1.1\r\nHost: x\r\n${spoofed.join('\r\n')}\r\nX-Normal-Header: kept\r\nConnection: close\r\n\r\n`);
  assert.deepEqual(statuses(answer), [200]);
  const [params] = fcgi.requests;
  const passed = Object.keys(params).filter((name) => name.startsWith('HTTP_')).sort();
  assert.deepEqual(passed, ['HTTP_CONNECTION', 'HTTP_HOST', 'HTTP_X_NORMAL_HEADER']);
  assert.equal(params.HTTP_X_NORMAL_HEADER, 'kept');
});
