'use strict';
// FastCGI request bodies are read whole before a connection to the FastCGI server is taken (a
// rule's requestBuffering, on by default), so a slow upload holds no PHP-FPM child: up to 1 MiB
// in memory (32 MiB for a worker's bodies together), larger bodies in an unlinked file in the
// temporary directory; maxBodySize refuses a
// body before any of it is read. Against test/support/fake-fastcgi.js, which reports what it got;
// test/pipeline/php-fpm.test.js has the same against a real PHP-FPM with one child.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { startPipeline } = require('../support/pipeline');
const { startFakeFastcgi } = require('../support/fake-fastcgi');
const { makeTempDir, request, waitUntil } = require('../support/helpers');
const { openBodyFiles, bodyFileLinks } = require('../support/body-files');
const { bytesInMemory, BODY_MEMORY_BYTES, WORKER_MEMORY_BYTES } = require('../../lib/pipeline/upstream/request-body');

const MiB = 1024 * 1024;

const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');

// A FastCGI server answering with the body's length and checksum; `seen` is called with what was
// true while the request was at the server (before its answer).
async function checksumServer(t, dir, { serial = false, seen = () => {} } = {}) {
  const fcgi = await startFakeFastcgi(dir, (r) => {
    seen(r);
    r.write(`Content-Type: text/plain\r\n\r\n${r.body.length} ${sha256(r.body)}`);
    r.end();
  }, { serial });
  t.after(() => fcgi.stop());
  return fcgi;
}

async function site(t, fcgi, rule = {}, extra = {}) {
  const s = await startPipeline({ config: { fastcgi: [{ upstream: fcgi.upstream, ...rule }], ...extra }, files: { 'up.php': '', 'hello.php': '' } });
  t.after(() => s.stop());
  return s;
}

// os.tmpdir() reads TMPDIR each time: svr's body files go to `dir` for this test.
function useTmpdir(t, dir) {
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  t.after(() => { if (previous === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = previous; });
}

// Sends the head and `sent` bytes of a body of `declared` bytes, then waits; resolves the
// connection and a promise of everything it receives until it closes.
function partialUpload(port, declared, sent, pathname = '/up.php') {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST ${pathname} HTTP/1.1\r\nHost: x\r\nContent-Length: ${declared}\r\n\r\n`);
      socket.write(Buffer.alloc(sent, 'a'), () => resolve({ socket, received: () => text, closed }));
    });
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { text += chunk; });
    socket.on('error', () => {});
    const closed = new Promise((done) => socket.on('close', () => done(text)));
  });
}

// Resolves once nothing waits in the client's own buffer: every byte is on its way to svr.
function sentWhole(socket) {
  return waitUntil(() => socket.writableLength === 0, 5000);
}

test('a client that stops sending its body holds no FastCGI connection; others are served; 504 at firstByte, and the connection closes', async (t) => {
  const dir = makeTempDir();
  const fcgi = await checksumServer(t, dir, { serial: true }); // one PHP child
  const s = await site(t, fcgi, { timeouts: { firstByte: 2000 } });
  const slow = await partialUpload(s.port, 100000, 50000);
  assert.ok(await waitUntil(() => bytesInMemory() === 50000, 5000), 'svr is reading the slow upload');
  const other = await request(`${s.url}/hello.php`);
  assert.equal(other.status, 200, 'the one child was free for another request');
  assert.equal(slow.received(), '', 'the slow upload is still waiting');
  assert.equal(fcgi.requests.length, 1, 'only the other request reached the FastCGI server');
  const answer = await slow.closed;
  assert.match(answer, /^HTTP\/1\.1 504 /);
  const head = answer.slice(0, answer.indexOf('\r\n\r\n') + 2);
  assert.match(head, /\r\nConnection: close\r\n/i, 'the connection, whose body will never come whole, closes after the answer');
  assert.equal(fcgi.accepted(), 1, 'the slow upload never took a connection');
});

test('a body over 1 MiB goes to an unlinked file in TMPDIR as it arrives; every byte reaches the script; the file is closed after', async (t) => {
  assert.equal(BODY_MEMORY_BYTES, MiB);
  const dir = makeTempDir();
  const fcgi = await checksumServer(t, dir);
  const s = await site(t, fcgi);
  const tmp = makeTempDir();
  useTmpdir(t, tmp);
  for (const size of [MiB, MiB + 1, 3 * MiB + 7]) {
    const body = crypto.randomBytes(size);
    const res = await request(`${s.url}/up.php`, { method: 'POST', headers: { 'content-length': size }, body });
    assert.equal(res.text, `${size} ${sha256(body)}`, `${size} bytes`);
  }
  assert.ok(await waitUntil(() => bytesInMemory() === 0, 5000), `memory given back after the answers: ${bytesInMemory()}`);
  const upload = await partialUpload(s.port, 2 * MiB, 1.5 * MiB);
  // Opened, then unlinked: the link reads "(deleted)" once both are done.
  const unlinked = () => openBodyFiles().filter((file) => file.endsWith(' (deleted)'));
  assert.ok(await waitUntil(() => unlinked().length === 1, 5000), `a body file is open while the body arrives: ${openBodyFiles()}`);
  assert.ok(unlinked()[0].startsWith(path.join(tmp, 'svr-body-')), unlinked()[0]);
  const [link] = bodyFileLinks(); // the unlinked file, through svr's own descriptor
  assert.equal((fs.statSync(link).mode & 0o777).toString(8), '600', 'readable and writable by svr\'s user alone');
  assert.deepEqual(fs.readdirSync(tmp), [], 'nothing left in the directory');
  assert.equal(bytesInMemory(), 0, 'what memory held of it went to the file');
  upload.socket.write(Buffer.alloc(0.5 * MiB, 'a'));
  const expected = `${2 * MiB} ${sha256(Buffer.alloc(2 * MiB, 'a'))}`;
  assert.ok(await waitUntil(() => upload.received().includes(expected), 5000), upload.received());
  upload.socket.destroy();
  assert.ok(await waitUntil(() => openBodyFiles().length === 0, 5000), 'the file is closed after the answer');
  assert.deepEqual(fs.readdirSync(tmp), []);
});

// The body file cut short while its request waits for the one FastCGI connection: the script
// gets no body shorter than its CONTENT_LENGTH, the client a 500, the log the reason.
test('a body file that cannot be read back whole: 500 and the reason in the log; the script never runs', async (t) => {
  const dir = makeTempDir();
  let held = null;
  const fcgi = await startFakeFastcgi(dir, (r) => {
    if (r.params.SCRIPT_NAME === '/hello.php') { held = r; return; }
    r.write(`Content-Type: text/plain\r\n\r\n${r.body.length}`);
    r.end();
  });
  t.after(() => fcgi.stop());
  const s = await site(t, fcgi, { maxConnections: 1 });
  useTmpdir(t, makeTempDir());
  const first = request(`${s.url}/hello.php`);
  assert.ok(await waitUntil(() => held !== null, 5000), 'the first request holds the connection');
  const size = 3 * MiB;
  const upload = request(`${s.url}/up.php`, { method: 'POST', headers: { 'content-length': size }, body: Buffer.alloc(size, 'a') });
  const whole = () => bodyFileLinks().filter((link) => fs.statSync(link).size === size);
  assert.ok(await waitUntil(() => whole().length === 1, 5000), 'the body is in its file, waiting for the connection');
  fs.truncateSync(whole()[0], 1000);
  held.write('Content-Type: text/plain\r\n\r\nhello');
  held.end();
  assert.equal((await first).text, 'hello');
  assert.equal((await upload).status, 500);
  await s.waitForLog(/the buffered request body could not be read/);
  assert.deepEqual(fcgi.requests.map((params) => params.SCRIPT_NAME), ['/hello.php'], 'the cut body reached no script');
  assert.ok(await waitUntil(() => openBodyFiles().length === 0, 5000), 'the file is closed');
});

test('a worker holds 32 MiB of bodies in memory at most: the body that would go beyond goes to a file', async (t) => {
  assert.equal(WORKER_MEMORY_BYTES, 32 * MiB);
  const dir = makeTempDir();
  const fcgi = await checksumServer(t, dir);
  const s = await site(t, fcgi);
  const uploads = [];
  t.after(() => { for (const upload of uploads) upload.socket.destroy(); });
  const SENT = 1000000; // of MiB each: 33 of them fit in 32 MiB (33,000,000 <= 33,554,432), 34 do not
  for (let i = 0; i < 33; i++) uploads.push(await partialUpload(s.port, MiB, SENT));
  assert.ok(await waitUntil(() => bytesInMemory() === 33 * SENT, 10000), `33 bodies in memory: ${bytesInMemory()}`);
  assert.deepEqual(openBodyFiles(), []);
  uploads.push(await partialUpload(s.port, MiB, SENT));
  assert.ok(await waitUntil(() => openBodyFiles().length === 1, 5000), 'the 34th body went to a file');
  assert.equal(bytesInMemory(), 33 * SENT);
  for (const upload of uploads) upload.socket.destroy();
  assert.ok(await waitUntil(() => bytesInMemory() === 0 && openBodyFiles().length === 0, 5000), 'all given back when the clients went away');
  assert.equal(fcgi.accepted(), 0);
});

test('a client that goes away mid-upload: what was kept of its body is given back, and nothing reaches the script', async (t) => {
  const dir = makeTempDir();
  const fcgi = await checksumServer(t, dir);
  const s = await site(t, fcgi);
  const inMemory = await partialUpload(s.port, 100000, 50000);
  assert.ok(await waitUntil(() => bytesInMemory() === 50000, 5000), 'the body is being kept in memory');
  inMemory.socket.destroy();
  assert.ok(await waitUntil(() => bytesInMemory() === 0, 5000), 'the memory is given back');
  const inFile = await partialUpload(s.port, 2 * MiB, 1.5 * MiB);
  await sentWhole(inFile.socket);
  assert.ok(await waitUntil(() => openBodyFiles().length === 1, 5000), 'the body is being kept in a file');
  inFile.socket.destroy();
  assert.ok(await waitUntil(() => openBodyFiles().length === 0, 5000), 'the file is closed');
  assert.equal(fcgi.accepted(), 0);
});

test('maxBodySize: a body of exactly the limit runs; one byte more is 413 before any of it is read, the connection closed', async (t) => {
  const dir = makeTempDir();
  const fcgi = await checksumServer(t, dir);
  for (const requestBuffering of [true, false]) {
    const s = await site(t, fcgi, { maxBodySize: 100, requestBuffering });
    const atLimit = await request(`${s.url}/up.php`, { method: 'POST', headers: { 'content-length': 100 }, body: Buffer.alloc(100, 'x') });
    assert.equal(atLimit.status, 200);
    assert.equal(atLimit.text, `100 ${sha256(Buffer.alloc(100, 'x'))}`);
    const before = fcgi.requests.length;
    // The head alone: svr answers without waiting for the body.
    const over = await partialUpload(s.port, 101, 0);
    const answer = await over.closed;
    assert.match(answer, /^HTTP\/1\.1 413 /, `requestBuffering ${requestBuffering}`);
    assert.match(answer, /\r\nConnection: close\r\n/i);
    assert.equal(fcgi.requests.length, before, 'no script ran');
    assert.ok(s.stderr().some((line) => /POST \/up\.php: a body of 101 bytes, over maxBodySize \(100\); answering 413/.test(line)), s.stderr().join('\n'));
  }
});

test('a temporary directory that cannot be written: 1 MiB bodies (memory) go on; one byte more is 500, the reason in the log', async (t) => {
  const dir = makeTempDir();
  const fcgi = await checksumServer(t, dir);
  const s = await site(t, fcgi);
  useTmpdir(t, path.join(dir, 'missing'));
  const small = await request(`${s.url}/up.php`, { method: 'POST', headers: { 'content-length': MiB }, body: Buffer.alloc(MiB, 'y') });
  assert.equal(small.status, 200);
  const large = await request(`${s.url}/up.php`, { method: 'POST', headers: { 'content-length': MiB + 1 }, body: Buffer.alloc(MiB + 1, 'y') });
  assert.equal(large.status, 500);
  assert.ok(s.stderr().some((line) => /the request body could not be kept in a temporary file: ENOENT; answering 500/.test(line)), s.stderr().join('\n'));
  assert.equal(fcgi.requests.length, 1);
});

test('over HTTP/2 a buffered body of 1 MiB arrives whole', async (t) => {
  const { startTlsPipeline, h2Request } = require('../support/tls-helpers');
  const dir = makeTempDir();
  const fcgi = await checksumServer(t, dir);
  const tls = await startTlsPipeline({ config: { enableHTTP2: true, fastcgi: [{ upstream: fcgi.upstream }] }, files: { 'up.php': '' } });
  t.after(() => tls.stop());
  const body = crypto.randomBytes(1024 * 1024);
  const res = await h2Request(tls.httpsUrl, '/up.php', { method: 'POST', headers: { 'content-length': String(body.length) }, body });
  assert.equal(res.alpn, 'h2');
  assert.equal(res.text, `${body.length} ${sha256(body)}`);
});
