'use strict';
// Files too large to cache were compressed on every request, each
// brotli stream holding ~12 MiB (150 held streams: +1.8 GiB), gzip of an 11 MB file costing
// 0.45 s of CPU. Now: at most compressionMaxStreams compressions on the fly per worker (more
// get identity), none for files above compressionMaxFileSize, and a bounded brotli window.
// What a request gets back runs in-process (support/pipeline.js); the memory bound on a real worker.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const stream = require('node:stream');
const zlib = require('node:zlib');
const { startServer, request, readyWorkerPids, makeTempDir } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

function text(size) {
  const words = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ';
  let out = '';
  let i = 0;
  while (out.length < size) out += `${i++} ${words}\n`;
  return out.slice(0, size);
}

const STREAMED = text(3 * 1024 * 1024); // above fileCacheMaxFileSize (1 MiB): compressed as it streams
// Text that compresses little: a held response cannot fit whole in the loopback socket buffers
// (several MiB), so its compressor stays busy while the client does not read.
const HELD = require('node:crypto').randomBytes(18 * 1024 * 1024).toString('base64');

// Opens a request that never reads its body; resolves with the response headers.
function held(url, headers) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      res.pause();
      resolve({ req, res, coding: res.headers['content-encoding'] || 'identity', vary: res.headers.vary });
    });
    req.on('error', reject);
  });
}

// `count` GETs of url at once, each on its own connection: the connections are opened and
// answered once first (warm: a kept-alive connection the server reads from), then every request
// is written in one turn of the event loop, so the server (in this process) reads them all in one
// turn, and decides every answer, before any file it opens for them is open. Resolves once every
// head has come, the responses paused.
async function burst(url, count, headers, warmUrl) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: count });
  const warm = () => new Promise((resolve, reject) => {
    http.get(warmUrl, { agent }, (res) => { res.resume(); res.on('end', resolve); }).on('error', reject);
  });
  await Promise.all(Array.from({ length: count }, warm));
  // The sockets are back in the agent's pool before the promise of their last response settles.
  assert.equal(Object.values(agent.freeSockets).flat().length, count, 'one warm connection per request');
  const answers = await Promise.all(Array.from({ length: count }, () => new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent }, (res) => {
      res.pause();
      resolve({ req, res, coding: res.headers['content-encoding'] || 'identity' });
    });
    req.on('error', reject);
  })));
  assert.equal(new Set(answers.map((a) => a.req.socket)).size, count, 'each on its own connection');
  return { answers, agent };
}

const sha256 = (data) => crypto.createHash('sha256').update(data).digest('hex');

// The sha256 of a paused response's body, decoded as it comes (HELD's 24 MiB are not kept).
async function decodedDigest({ res, coding }) {
  const hash = crypto.createHash('sha256');
  const sink = async (source) => { for await (const chunk of source) hash.update(chunk); };
  if (coding === 'br') await stream.promises.pipeline(res, zlib.createBrotliDecompress(), sink);
  else await stream.promises.pipeline(res, sink);
  return hash.digest('hex');
}

function rssMiB(pid) {
  return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
}

test('on-the-fly compressions per worker are capped: beyond compressionMaxStreams, identity', async () => {
  const server = await startPipeline({ config: { compressionMaxStreams: 2, compressionMaxFileSize: 64 * 1024 * 1024 }, files: { 'big.txt': HELD } });
  const open = [];
  try {
    for (let i = 0; i < 4; i++) open.push(await held(`${server.url}/big.txt`, { 'accept-encoding': 'br' }));
    assert.deepEqual(open.map((o) => o.coding), ['br', 'br', 'identity', 'identity']);
    assert.ok(open.every((o) => /accept-encoding/i.test(o.vary)));
    for (const o of open) o.req.destroy();
    // once they are gone, compression is available again
    const again = await request(`${server.url}/big.txt`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(again.headers['content-encoding'], 'gzip');
  } finally {
    for (const o of open) o.req.destroy();
    await server.stop();
  }
});

// The slot was taken when the compressor started, after the file's open and stat: a burst decided
// meanwhile all got br (10 of 10 with compressionMaxStreams 2). Now it is reserved at the decision.
test('a burst of requests decided at once gets no more compressed answers than compressionMaxStreams; each slot comes back', async () => {
  const server = await startPipeline({ config: { compressionMaxStreams: 2, compressionMaxFileSize: 64 * 1024 * 1024 }, files: { 'big.txt': HELD, 'small.txt': 'warm' } });
  const url = `${server.url}/big.txt`;
  const open = [];
  let agent = null;
  try {
    const sent = await burst(url, 10, { 'accept-encoding': 'br' }, `${server.url}/small.txt`);
    agent = sent.agent;
    const { answers } = sent;
    open.push(...answers);
    const codings = answers.map((a) => a.coding);
    assert.equal(codings.filter((c) => c === 'br').length, 2, `codings: ${codings.join(' ')}`);
    assert.equal(codings.filter((c) => c === 'identity').length, 8, `codings: ${codings.join(' ')}`);
    assert.ok(answers.every((a) => /accept-encoding/i.test(a.res.headers.vary)));
    const digests = await Promise.all(answers.map(decodedDigest));
    assert.deepEqual(digests, answers.map(() => sha256(HELD)), 'every body, decoded, is the file');
    // The burst is over (a compressor closes before its response's last byte is out): both slots
    // are free again, and the cap still holds.
    for (let i = 0; i < 3; i++) open.push(await held(url, { 'accept-encoding': 'br' }));
    assert.deepEqual(open.slice(-3).map((o) => o.coding), ['br', 'br', 'identity']);
  } finally {
    for (const o of open) o.req.destroy();
    if (agent) agent.destroy();
    await server.stop();
  }
});

// Each of these is decided as br (a slot reserved) and ends without a compressor; the slot is
// given back before the answer is written, so the next request may take it.
test('HEAD, 304 and 412 answers for a file compressed as it streams give their slot back; Range never takes one', async () => {
  const server = await startPipeline({ config: { compressionMaxStreams: 2, compressionMaxFileSize: 64 * 1024 * 1024 }, files: { 'big.txt': HELD } });
  const url = `${server.url}/big.txt`;
  const br = { 'accept-encoding': 'br' };
  const open = [];
  try {
    let etag;
    for (let i = 0; i < 3; i++) {
      const head = await request(url, { method: 'HEAD', headers: br });
      assert.equal(head.status, 200);
      assert.equal(head.headers['content-encoding'], 'br', `HEAD ${i + 1}`);
      etag = head.headers.etag;
    }
    assert.match(etag, /-br"$/);
    for (let i = 0; i < 3; i++) {
      assert.equal((await request(url, { headers: { ...br, 'if-none-match': etag } })).status, 304, `304 ${i + 1}`);
      assert.equal((await request(url, { headers: { ...br, 'if-match': '"another"' } })).status, 412, `412 ${i + 1}`);
      const part = await request(url, { headers: { ...br, range: 'bytes=0-99' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers['content-encoding'], undefined);
      assert.equal(part.text, HELD.slice(0, 100));
    }
    for (let i = 0; i < 3; i++) open.push(await held(url, br));
    assert.deepEqual(open.map((o) => o.coding), ['br', 'br', 'identity'], 'both slots free, the cap held');
  } finally {
    for (const o of open) o.req.destroy();
    await server.stop();
  }
});

// The responder on its own (as file-cache.test.js drives it), so that the end of each request's
// handling is known (respond's promise): a client gone before the body, a file gone before its
// open, a file changed before its open, each decided as br.
test('a client gone before the body, or a file gone or changed before its open, gives the slot back (unit)', async (t) => {
  const { createResponder } = require('../../../lib/pipeline/static/respond');
  const { createWebRoot } = require('../../../lib/pipeline/web-root');
  const dir = fs.realpathSync(makeTempDir('svr-slots-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'big.txt');
  const content = crypto.randomBytes(1536 * 1024).toString('base64'); // 2 MiB: too large to keep
  fs.writeFileSync(file, content);
  const errors = [];
  const config = {
    enableCompression: true, enableETag: true, dontCompress: [], fileCacheMaxBytes: 1 << 25, fileCacheMaxFileSize: 65536,
    compressionMaxStreams: 2, compressionMaxFileSize: 1 << 26,
  };
  const site = { config, headers: { fixed: [], withPath: [] }, sendError: (req, res, status) => errors.push(status), webRoot: createWebRoot(dir) };
  const { respond } = createResponder(site, { isHidden: () => false });

  // A response that takes what it is given and never says it is written: a compressor piped into
  // it stays busy, its slot taken.
  function heldRes() {
    const res = new stream.Writable({ highWaterMark: 1024, write() {} });
    const headers = {};
    Object.assign(res, {
      headers, status: 0, headersSent: false, socket: {},
      getHeader: (name) => headers[name.toLowerCase()],
      setHeader: (name, value) => { headers[name.toLowerCase()] = value; },
      writeHead(status, more) {
        res.status = status;
        for (const name of Object.keys(more)) headers[name.toLowerCase()] = more[name];
        res.headersSent = true;
        return res;
      },
    });
    return res;
  }
  const newReq = () => ({ method: 'GET', headers: { 'accept-encoding': 'br' }, socket: { destroyed: false }, svr: {} });
  const found = () => ({ real: file, rel: 'big.txt', stats: fs.statSync(file) });

  // The client gone before the decision's body starts: at the first look, then while the file opens.
  for (let i = 0; i < 3; i++) {
    const req = newReq();
    req.socket.destroyed = true;
    const res = heldRes();
    await respond(req, res, found());
    assert.equal(res.status, 0, 'nothing is written for a client gone');
  }
  for (let i = 0; i < 3; i++) {
    const req = newReq();
    const res = heldRes();
    const done = respond(req, res, found());
    req.socket.destroyed = true; // the open is under way
    await done;
    assert.equal(res.status, 0, 'nothing is written for a client gone');
  }
  // The file removed after its stat: the open fails (404).
  const stale = found();
  fs.renameSync(file, `${file}.away`);
  for (let i = 0; i < 3; i++) await respond(newReq(), heldRes(), stale);
  assert.deepEqual(errors, [404, 404, 404]);
  fs.renameSync(`${file}.away`, file);
  // The file changed after its stat: decided again for what was opened, and the client gone
  // meanwhile. A HEAD first has the version of the stat confirmed (opened once), so that the
  // request is decided for it without an open, and opens the changed file afterwards.
  for (let i = 0; i < 3; i++) {
    const before = found();
    const head = heldRes();
    await respond({ ...newReq(), method: 'HEAD' }, head, before);
    assert.deepEqual([head.status, head.headers['content-encoding']], [200, 'br']);
    fs.appendFileSync(file, 'more');
    const req = newReq();
    const res = heldRes();
    const done = respond(req, res, before);
    req.socket.destroyed = true;
    await done;
    assert.equal(res.status, 0);
  }
  // Both slots are free: two held responses are compressed, a third is not.
  const holding = [];
  t.after(() => { for (const res of holding) res.destroy(); });
  for (let i = 0; i < 3; i++) {
    const res = heldRes();
    holding.push(res);
    await respond(newReq(), res, found());
    assert.equal(res.status, 200);
  }
  assert.deepEqual(holding.map((res) => res.headers['content-encoding'] || 'identity'), ['br', 'br', 'identity']);
});

test('files above compressionMaxFileSize are sent uncompressed; smaller streamed ones are compressed', async () => {
  const server = await startPipeline({
    config: { compressionMaxFileSize: 2 * 1024 * 1024 },
    files: { 'big.txt': STREAMED, 'medium.txt': text(1536 * 1024) },
  });
  try {
    const big = await request(`${server.url}/big.txt`, { headers: { 'accept-encoding': 'br, gzip' } });
    assert.equal(big.headers['content-encoding'], undefined);
    assert.equal(big.body.length, STREAMED.length);
    assert.match(big.headers.vary, /accept-encoding/i);
    const medium = await request(`${server.url}/medium.txt`, { headers: { 'accept-encoding': 'br' } });
    assert.equal(medium.headers['content-encoding'], 'br');
  } finally {
    await server.stop();
  }
});

test('40 held brotli streams cost a bounded amount of memory', async (t) => {
  const server = await startServer({ config: { compressionMaxStreams: 64 }, files: { 'big.txt': STREAMED } });
  const open = [];
  try {
    const [pid] = readyWorkerPids(server);
    const before = rssMiB(pid);
    for (let i = 0; i < 40; i++) open.push(await held(`${server.url}/big.txt`, { 'accept-encoding': 'br' }));
    assert.ok(open.every((o) => o.coding === 'br'));
    const during = rssMiB(pid);
    t.diagnostic(`40 held brotli streams: worker RSS ${before.toFixed(0)} -> ${during.toFixed(0)} MiB`);
    assert.ok(during - before < 40 * 4, `RSS ${before.toFixed(0)} -> ${during.toFixed(0)} MiB`);
  } finally {
    for (const o of open) o.req.destroy();
    await server.stop();
  }
});
