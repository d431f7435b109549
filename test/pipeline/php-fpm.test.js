'use strict';
// PHP through Debian's PHP-FPM (started by the test on a Unix socket in its own directory, and
// once on a loopback port): the requests a PHP site makes, as a browser would send them.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { startPipeline } = require('../support/pipeline');
const { startPhpFpm, readableByAll } = require('../support/php-fpm');
const { request, waitUntil } = require('../support/helpers');
const { bytesInMemory } = require('../../lib/pipeline/upstream/request-body');

const SCRIPTS = {
  'hello.php': '<?php echo "Hello from PHP ", PHP_VERSION, "\\n"; error_log("a line for the error log");',
  'vars.php': '<?php header("Content-Type: application/json"); echo json_encode(["get" => $_GET, "post" => $_POST, "server" => $_SERVER, "env_proxy" => getenv("HTTP_PROXY")]);',
  'upload.php': `<?php header("Content-Type: application/json");
    $f = $_FILES["file"] ?? null;
    echo json_encode(["name" => $f["name"] ?? null, "size" => $f["size"] ?? null, "error" => $f["error"] ?? null,
      "md5" => $f ? md5_file($f["tmp_name"]) : null, "field" => $_POST["field"] ?? null]);`,
  'big.php': '<?php header("Content-Type: application/octet-stream"); $block = str_repeat("0123456789abcdef", 65536); for ($i = 0; $i < 10; $i++) { echo $block; flush(); }',
  'status.php': '<?php http_response_code(418); header("X-Php: yes"); setcookie("first", "1"); setcookie("second", "2"); echo "teapot";',
  'redirect.php': '<?php header("Location: /hello.php"); ',
  'info.php': '<?php phpinfo(INFO_VARIABLES | INFO_ENVIRONMENT);',
  'uploads/avatar.jpg': '<?php echo "AVATAR RAN"; ?>',
};

let fpm;
let site;

before(async () => {
  fpm = await startPhpFpm();
  if (fpm.skip) return;
  site = await startPipeline({
    config: { fastcgi: [{ upstream: fpm.upstream, frontController: null, env: { APP_ENV: 'testing' } }], trustedProxies: ['127.0.0.1/32'] },
    files: SCRIPTS,
  });
  readableByAll(site.dir, site.root, path.join(site.root, 'uploads'));
});

after(async () => {
  if (site) await site.stop();
  if (fpm && !fpm.skip) await fpm.stop();
});

const skip = () => (fpm.skip ? fpm.skip : false);

test('hello world; PHP\'s error_log() lines reach svr\'s error log', async (t) => {
  if (skip()) return t.skip(skip());
  const res = await request(`${site.url}/hello.php`);
  assert.equal(res.status, 200);
  assert.match(res.text, /^Hello from PHP 8\.\d+\.\d+\n$/);
  await site.waitForLog(/error fastcgi unix:.*: \/hello\.php: PHP message: a line for the error log/);
});

test('$_GET, $_POST (urlencoded) and the RFC 3875 variables', async (t) => {
  if (skip()) return t.skip(skip());
  const res = await request(`${site.url}/vars.php/extra/path?a=1&b=two`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-custom': 'yes', proxy: 'http://evil.example', 'x-forwarded-for': '203.0.113.9', 'x_smuggled': '1', 'x.dotted': '1' },
    body: 'x=1&y=%C3%A9',
  });
  assert.equal(res.status, 200);
  const { get, post, server, env_proxy: envProxy } = JSON.parse(res.text);
  assert.deepEqual(get, { a: '1', b: 'two' });
  assert.deepEqual(post, { x: '1', y: 'é' });
  assert.equal(server.SCRIPT_FILENAME, path.join(site.root, 'vars.php'));
  assert.equal(server.SCRIPT_NAME, '/vars.php');
  assert.equal(server.PATH_INFO, '/extra/path');
  assert.equal(server.REQUEST_URI, '/vars.php/extra/path?a=1&b=two');
  assert.equal(server.QUERY_STRING, 'a=1&b=two');
  assert.equal(server.REQUEST_METHOD, 'POST');
  assert.equal(server.DOCUMENT_ROOT, site.root);
  assert.equal(server.REQUEST_SCHEME, 'http');
  assert.equal(server.HTTPS, undefined);
  assert.equal(server.SERVER_NAME, '127.0.0.1');
  assert.equal(server.SERVER_PORT, String(site.port));
  assert.equal(server.GATEWAY_INTERFACE, 'CGI/1.1');
  assert.equal(server.SERVER_PROTOCOL, 'HTTP/1.1');
  assert.equal(server.REMOTE_ADDR, '203.0.113.9', 'the client behind a trusted proxy');
  assert.equal(server.HTTP_X_CUSTOM, 'yes');
  assert.equal(server.APP_ENV, 'testing', 'env from the config');
  assert.equal(server.HTTP_PROXY, undefined, 'no httpoxy');
  assert.equal(envProxy, false, 'no httpoxy in getenv()');
  assert.equal(server.HTTP_X_SMUGGLED, undefined, 'header names with "_" are dropped');
  assert.equal(server.HTTP_X_DOTTED, undefined, 'header names with "." are dropped (PHP would turn it into "_")');
  assert.equal(server.CONTENT_TYPE, 'application/x-www-form-urlencoded');
});

test('phpinfo() shows the variables', async (t) => {
  if (skip()) return t.skip(skip());
  const res = await request(`${site.url}/info.php?q=1`, { headers: { 'x-test': 'shown' } });
  assert.equal(res.status, 200);
  for (const [name, value] of [['SCRIPT_FILENAME', path.join(site.root, 'info.php')], ['REQUEST_SCHEME', 'http'], ['SERVER_NAME', '127.0.0.1'], ['REMOTE_ADDR', '127.0.0.1'], ['HTTP_X_TEST', 'shown'], ['QUERY_STRING', 'q=1'], ['APP_ENV', 'testing']]) {
    assert.ok(res.text.includes(`<td class="e">$_SERVER['${name}']</td><td class="v">${value}</td>`), `${name} = ${value}`);
  }
});

function multipart(fields, file) {
  const boundary = `----svr${crypto.randomBytes(8).toString('hex')}`;
  const parts = [];
  for (const [name, value] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: application/octet-stream\r\n\r\n`), file.data, Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), type: `multipart/form-data; boundary=${boundary}` };
}

test('$_POST multipart: a 3 MB upload whose checksum PHP reports', async (t) => {
  if (skip()) return t.skip(skip());
  const data = crypto.randomBytes(3 * 1024 * 1024);
  const { body, type } = multipart({ field: 'value' }, { name: 'random.bin', data });
  const res = await request(`${site.url}/upload.php`, { method: 'POST', headers: { 'content-type': type, 'content-length': body.length }, body });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(JSON.parse(res.text), {
    name: 'random.bin', size: data.length, error: 0, md5: crypto.createHash('md5').update(data).digest('hex'), field: 'value',
  });
});

test('a 10 MB response arrives whole', async (t) => {
  if (skip()) return t.skip(skip());
  const expected = crypto.createHash('md5').update(Buffer.from('0123456789abcdef'.repeat(65536 * 10))).digest('hex');
  const { bytes, md5 } = await new Promise((resolve, reject) => {
    http.get(`${site.url}/big.php`, (res) => {
      const hash = crypto.createHash('md5');
      let n = 0;
      res.on('data', (c) => { n += c.length; hash.update(c); });
      res.on('end', () => resolve({ bytes: n, md5: hash.digest('hex') }));
      res.on('error', reject);
    }).on('error', reject);
  });
  assert.equal(bytes, 10 * 1024 * 1024);
  assert.equal(md5, expected);
});

test('status, headers and two cookies set by PHP; a redirect', async (t) => {
  if (skip()) return t.skip(skip());
  const res = await request(`${site.url}/status.php`);
  assert.equal(res.status, 418);
  assert.equal(res.headers['x-php'], 'yes');
  assert.deepEqual(res.headers['set-cookie'], ['first=1', 'second=2']);
  assert.equal(res.text, 'teapot');
  const redirect = await request(`${site.url}/redirect.php`);
  assert.equal(redirect.status, 302);
  assert.equal(redirect.headers.location, '/hello.php');
});

test('the pathinfo exploit is refused: an uploaded image never runs as PHP', async (t) => {
  if (skip()) return t.skip(skip());
  for (const url of ['/uploads/avatar.jpg/x.php', '/uploads/avatar.jpg/.php', '/uploads/avatar.jpg/x.php/y']) {
    const res = await request(site.url + url);
    assert.equal(res.status, 404, url);
    assert.ok(!res.text.includes('AVATAR'), url);
  }
  const image = await request(`${site.url}/uploads/avatar.jpg`);
  assert.equal(image.status, 200);
  assert.equal(image.text, SCRIPTS['uploads/avatar.jpg'], 'the image itself is a static file, sent as it is');
});

test('PHP-FPM over TCP (127.0.0.1:PORT)', async (t) => {
  if (skip()) return t.skip(skip());
  const tcp = await startPhpFpm({ listen: 'tcp', maxChildren: 1 });
  const tcpSite = await startPipeline({ config: { fastcgi: [{ upstream: tcp.upstream }] }, files: { 'hello.php': SCRIPTS['hello.php'] } });
  t.after(async () => { await tcpSite.stop(); await tcp.stop(); });
  readableByAll(tcpSite.dir, tcpSite.root);
  assert.match(tcp.upstream, /^127\.0\.0\.1:\d+$/);
  const res = await request(`${tcpSite.url}/hello.php`);
  assert.equal(res.status, 200);
  assert.match(res.text, /^Hello from PHP/);
});

test('over HTTPS and HTTP/2: HTTPS=on, REQUEST_SCHEME=https, :authority as HTTP_HOST, a POST', async (t) => {
  if (skip()) return t.skip(skip());
  const { startTlsPipeline, h2Request } = require('../support/tls-helpers');
  const tls = await startTlsPipeline({ config: { enableHTTP2: true, fastcgi: [{ upstream: fpm.upstream }] }, files: { 'vars.php': SCRIPTS['vars.php'], 'status.php': SCRIPTS['status.php'] } });
  t.after(() => tls.stop());
  readableByAll(tls.dir, tls.root);
  const body = 'x=1&y=2';
  const res = await h2Request(tls.httpsUrl, '/vars.php?q=h2', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(body.length) }, body });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.alpn, 'h2');
  const { get, post, server } = JSON.parse(res.text);
  assert.deepEqual(get, { q: 'h2' });
  assert.deepEqual(post, { x: '1', y: '2' });
  assert.equal(server.HTTPS, 'on');
  assert.equal(server.REQUEST_SCHEME, 'https');
  assert.equal(server.SERVER_PROTOCOL, 'HTTP/2.0');
  assert.equal(server.HTTP_HOST, `localhost:${tls.sport}`);
  assert.equal(server.SERVER_NAME, 'localhost');
  const teapot = await h2Request(tls.httpsUrl, '/status.php');
  assert.equal(teapot.status, 418);
  assert.deepEqual(teapot.headers['set-cookie'], ['first=1', 'second=2']);
});

// The body is read whole before svr takes a connection (requestBuffering): a client uploading
// slowly holds no PHP child. With one child, a request beside an unfinished upload is answered
// while the upload still waits; without buffering it would wait for the upload's firstByte.
test('a PHP-FPM with one child answers others while a client uploads slowly', async (t) => {
  if (skip()) return t.skip(skip());
  const one = await startPhpFpm({ maxChildren: 1 });
  const oneSite = await startPipeline({ config: { fastcgi: [{ upstream: one.upstream, timeouts: { firstByte: 10000 } }] }, files: SCRIPTS });
  t.after(async () => { await oneSite.stop(); await one.stop(); });
  readableByAll(oneSite.dir, oneSite.root);
  const slow = net.connect(oneSite.port, '127.0.0.1');
  slow.setEncoding('latin1');
  let answer = '';
  slow.on('data', (chunk) => { answer += chunk; });
  slow.on('error', () => {});
  const closed = new Promise((resolve) => slow.on('close', resolve));
  t.after(() => slow.destroy());
  const half = `x=${'a'.repeat(49998)}`;
  slow.write(`POST /vars.php HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${2 * half.length}\r\n\r\n${half}`);
  assert.ok(await waitUntil(() => bytesInMemory() === half.length, 5000), 'svr is reading the upload');
  const res = await request(`${oneSite.url}/hello.php`);
  assert.equal(res.status, 200);
  assert.match(res.text, /^Hello from PHP/);
  assert.equal(answer, '', 'the upload is still waiting for the rest of its body');
  slow.write('a'.repeat(half.length));
  await closed;
  assert.match(answer, /^HTTP\/1\.1 200 /);
  const body = answer.slice(answer.indexOf('\r\n\r\n') + 4).replace(/\r\n[0-9a-f]+\r\n/g, ''); // unchunked
  assert.equal(JSON.parse(body.slice(body.indexOf('{'), body.lastIndexOf('}') + 1)).post.x.length, 2 * half.length - 2);
});
