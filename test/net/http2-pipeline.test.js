'use strict';
// The whole pipeline over HTTP/2 behaves as over HTTP/1.1: conditional requests (304), the
// directory listing, mods, serverSideScript.js (which see the Host from :authority), the
// rewrite map's host rule, error pages, and the access log.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startTlsServer, httpsRequest, h2Request, curl } = require('../support/tls-helpers');

const MOD = `
module.exports = function (req, res, logFacilities, config, next) {
  if (req.parsedURL.pathname === '/mod/host') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ host: req.headers.host, parsedHost: req.parsedURL.host, protocol: req.parsedURL.protocol, httpVersion: req.httpVersion }));
    return;
  }
  if (req.parsedURL.pathname === '/mod/error') return res.error(403);
  if (req.parsedURL.pathname === '/mod/redirect') return res.redirect('/there', true);
  next();
};
module.exports.modInfo = { name: 'h2probe', version: '1.0.0' };
`;

const SCRIPT = String.raw`
if (href === '/post') {
  parsePostData((fields) => res.end('got ' + JSON.stringify(fields)));
  return;
}
if (href === '/connection-header') {
  res.setHeader('Connection', 'close');
  res.setHeader('Keep-Alive', 'timeout=5');
  res.end('set');
  return;
}
if (href === '/script') {
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('script on ' + req.headers.host + ' for ' + uobject.host + ' ' + checkHostname('localhost'));
  return;
}
`;

const FILES = {
  'f.txt': 'conditional body\n',
  'list/a.txt': 'a',
  'list/b.txt': 'b',
  'serverSideScript.js': SCRIPT,
  '../mods/h2probe.js': MOD,
  '404.html': '<p>custom not found</p>',
};

let server;
test.before(async () => {
  server = await startTlsServer({
    config: {
      enableHTTP2: true,
      enableDirectoryListing: true,
      modsDirectory: 'mods',
      maxPostDataSize: 100,
      rewriteMap: [{ definingRegex: '/^\\/hosted$/', host: 'localhost', replacements: [{ regex: '/^\\/hosted$/', replacement: '/f.txt' }] }],
    },
    files: FILES,
  });
});
test.after(async () => {
  if (server) await server.stop();
});

test('h2: If-None-Match and If-Modified-Since give 304 without a body', async () => {
  const first = await h2Request(server.httpsUrl, '/f.txt');
  assert.equal(first.status, 200);
  assert.ok(first.headers.etag, 'an ETag');
  const byTag = await h2Request(server.httpsUrl, '/f.txt', { headers: { 'if-none-match': first.headers.etag } });
  assert.equal(byTag.status, 304);
  assert.equal(byTag.body.length, 0);
  const byDate = await h2Request(server.httpsUrl, '/f.txt', { headers: { 'if-modified-since': first.headers['last-modified'] } });
  assert.equal(byDate.status, 304);
  await server.waitForLog(/"GET \/f.txt HTTP\/2.0" 304 0 /, 'stdout');
});

test('h2: the directory listing', async () => {
  const res = await h2Request(server.httpsUrl, '/list/');
  assert.equal(res.status, 200);
  assert.match(res.headers['content-type'], /text\/html/);
  assert.match(res.text, /a\.txt/);
  assert.match(res.text, /b\.txt/);
  const curled = await curl(['--insecure', '--http2', '--write-out', '\n%{http_version}', `${server.httpsUrl}/list/`]);
  assert.match(curled.stdout.toString(), /b\.txt[\s\S]*\n2$/);
});

test('h2: a mod sees the Host from :authority and https; its error page and redirect work', async () => {
  const res = await h2Request(server.httpsUrl, '/mod/host');
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(res.text), {
    host: `localhost:${server.sport}`, parsedHost: `localhost:${server.sport}`, protocol: 'https:', httpVersion: '2.0',
  });
  const error = await h2Request(server.httpsUrl, '/mod/error');
  assert.equal(error.status, 403);
  assert.match(error.headers['content-type'], /text\/html/);
  const redirect = await h2Request(server.httpsUrl, '/mod/redirect');
  assert.equal(redirect.status, 302);
  assert.equal(redirect.headers.location, '/there');
});

test('h2: serverSideScript.js runs with the Host from :authority', async () => {
  const res = await h2Request(server.httpsUrl, '/script');
  assert.equal(res.status, 200);
  assert.equal(res.text, `script on localhost:${server.sport} for localhost:${server.sport} true`);
  const h1 = await httpsRequest(`${server.httpsUrl}/script`);
  assert.equal(h1.text, res.text, 'the same over HTTP/1.1');
});

test('h2: the rewrite map matches on the host; a missing page gets the custom 404', async () => {
  const rewritten = await h2Request(server.httpsUrl, '/hosted');
  assert.equal(rewritten.status, 200);
  assert.equal(rewritten.text, 'conditional body\n');
  const missingPage = await h2Request(server.httpsUrl, '/nope');
  assert.equal(missingPage.status, 404);
  assert.match(missingPage.text, /custom not found/);
});

test('h2: a POST body reaches the script; one over maxPostDataSize gets 413, and Connection headers are left out quietly', async () => {
  const post = (body) => h2Request(server.httpsUrl, '/post', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  const small = await post('a=1&b=2');
  assert.equal(small.status, 200);
  assert.equal(small.text, 'got {"a":"1","b":"2"}');
  const big = await post(`a=${'x'.repeat(300)}`);
  assert.equal(big.status, 413);
  const set = await h2Request(server.httpsUrl, '/connection-header');
  assert.equal(set.status, 200);
  assert.equal(set.text, 'set');
  assert.equal(set.headers.connection, undefined);
  assert.ok(!server.stderr().some((line) => /UnsupportedWarning|connection header/i.test(line)), server.stderr().join('\n'));
});
