'use strict';
// The hot-file cache is never wrong: a file changed (even at the same size), grown, shrunk,
// replaced by a rename or deleted is seen by the very next request; memory stays bounded.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { startServer, request, makeTempDir } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');
const { FileCache } = require('../../../lib/pipeline/static/file-cache');

const A = 'A'.repeat(3000);
const B = 'B'.repeat(3000);
const ROUND_TIME = Math.floor(Date.now() / 1000) - 3600; // an mtime in whole seconds, an hour ago

// Rewrites `file` with `content` until its ctime differs from `ctimeMs` (the kernel's timestamp
// clock ticks every few ms): a condition to wait on, not a fixed sleep.
function writeWithNewCtime(file, content, ctimeMs) {
  for (;;) {
    fs.writeFileSync(file, content);
    if (fs.statSync(file).ctimeMs !== ctimeMs) return;
  }
}

// Sends the GETs in one write on one connection (the last with Connection: close) and parses the
// answers: [{ status, body }], in order.
function pipelined(port, paths) {
  const net = require('node:net');
  const requests = paths.map((p, i) => `GET ${p} HTTP/1.1\r\nHost: x\r\n${i === paths.length - 1 ? 'Connection: close\r\n' : ''}\r\n`);
  return new Promise((resolve, reject) => {
    const chunks = [];
    const socket = net.connect(port, '127.0.0.1', () => socket.write(requests.join('')));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      let rest = Buffer.concat(chunks).toString('latin1');
      const answers = [];
      while (rest.length > 0) {
        const end = rest.indexOf('\r\n\r\n');
        const head = rest.slice(0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)[1]);
        answers.push({ status: Number(head.slice(9, 12)), body: rest.slice(end + 4, end + 4 + length) });
        rest = rest.slice(end + 4 + length);
      }
      resolve(answers);
    });
  });
}

function revalidationTests(label, env) {
  describe(`revalidation (${label})`, () => {
    let srv;
    const get = (p, headers) => request(srv.url + p, { headers });
    before(async () => {
      srv = await startPipeline({ env, files: { 'same.txt': A, 'grow.txt': A, 'shrink.txt': A, 'swap.txt': A, 'gone.txt': A, 'touch.txt': A, 'enc.txt': A } });
    });
    after(() => srv.stop());
    const file = (name) => path.join(srv.root, name);

    test('a file changed to the same size is seen at once', async () => {
      assert.equal((await get('/same.txt')).text, A);
      assert.equal((await get('/same.txt')).text, A);
      fs.writeFileSync(file('same.txt'), B);
      assert.equal((await get('/same.txt')).text, B);
    });

    test('a changed file with its old mtime put back (cp -p, rsync -t) is seen at once', async () => {
      fs.utimesSync(file('touch.txt'), ROUND_TIME, ROUND_TIME); // whole seconds: utimes can put them back exactly
      const before = fs.statSync(file('touch.txt'));
      assert.equal((await get('/touch.txt')).text, A);
      writeWithNewCtime(file('touch.txt'), B, before.ctimeMs);
      fs.utimesSync(file('touch.txt'), ROUND_TIME, ROUND_TIME);
      assert.equal(fs.statSync(file('touch.txt')).mtimeMs, before.mtimeMs);
      assert.equal((await get('/touch.txt')).text, B);
    });

    test('a file that grew or shrank is sent whole, with its new length', async () => {
      assert.equal((await get('/grow.txt')).text, A);
      fs.appendFileSync(file('grow.txt'), 'more');
      const grown = await get('/grow.txt');
      assert.equal(grown.text, A + 'more');
      assert.equal(Number(grown.headers['content-length']), A.length + 4);
      assert.equal((await get('/shrink.txt')).text, A);
      fs.writeFileSync(file('shrink.txt'), 'short');
      assert.equal((await get('/shrink.txt')).text, 'short');
    });

    test('a file replaced by a rename (same size, same mtime) is seen at once', async () => {
      fs.utimesSync(file('swap.txt'), ROUND_TIME, ROUND_TIME);
      const before = fs.statSync(file('swap.txt'));
      assert.equal((await get('/swap.txt')).text, A);
      fs.writeFileSync(file('swap.tmp'), B);
      fs.utimesSync(file('swap.tmp'), ROUND_TIME, ROUND_TIME);
      fs.renameSync(file('swap.tmp'), file('swap.txt'));
      assert.equal(fs.statSync(file('swap.txt')).mtimeMs, before.mtimeMs);
      assert.equal((await get('/swap.txt')).text, B);
    });

    test('a deleted file is 404 at once, and served again when it comes back', async () => {
      assert.equal((await get('/gone.txt')).status, 200);
      fs.unlinkSync(file('gone.txt'));
      assert.equal((await get('/gone.txt')).status, 404);
      fs.writeFileSync(file('gone.txt'), B);
      const back = await get('/gone.txt');
      assert.equal(back.status, 200);
      assert.equal(back.text, B);
    });

    // Only with the settle time: with it at 0, writes within one timestamp tick would be missed on
    // kernels without fine-grained ctime (before Linux 6.13), which is what the settle time is for.
    test('300 quick same-size rewrites in place, each seen by the next request (identity and br)', { skip: env.SVR_FILE_CACHE_SETTLE_MS === '0' && 'needs the settle time' }, async () => {
      const http = require('node:http');
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        for (let i = 0; i < 300; i++) {
          const content = `version ${String(i).padStart(5, '0')} `.repeat(100); // same size every time
          fs.writeFileSync(file('same.txt'), content); // writes within one timestamp tick: same stats
          const headers = i % 2 ? { 'accept-encoding': 'br' } : {};
          const res = await request(srv.url + '/same.txt', { agent, headers });
          const body = i % 2 ? zlib.brotliDecompressSync(res.body).toString() : res.text;
          assert.equal(body.slice(0, 14), content.slice(0, 14), `rewrite ${i}`);
          assert.equal(body, content);
        }
      } finally {
        agent.destroy();
      }
    });

    test('pipelined requests handled in one turn share one lstat; the next request asks again', async () => {
      const lstatSync = fs.lstatSync;
      const target = file('turn.txt');
      fs.writeFileSync(target, A);
      let asked = 0;
      fs.lstatSync = (p, ...rest) => { if (p === target) asked++; return lstatSync(p, ...rest); };
      try {
        const answers = await pipelined(srv.port, Array(4).fill('/turn.txt'));
        assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200]);
        assert.ok(answers.every((a) => a.body === A));
        assert.equal(asked, 1, 'one lstat for the four requests of one read');
        fs.writeFileSync(target, B);
        assert.equal((await get('/turn.txt')).text, B);
        assert.equal(asked, 2);
      } finally {
        fs.lstatSync = lstatSync;
      }
    });

    test('compressed forms follow the file', async () => {
      const first = await get('/enc.txt', { 'accept-encoding': 'br' });
      assert.equal(zlib.brotliDecompressSync(first.body).toString(), A);
      const before = fs.statSync(file('enc.txt'));
      writeWithNewCtime(file('enc.txt'), B, before.ctimeMs);
      const second = await get('/enc.txt', { 'accept-encoding': 'br' });
      assert.equal(zlib.brotliDecompressSync(second.body).toString(), B);
      assert.notEqual(second.headers.etag, first.headers.etag);
    });
  });
}

// Default: a file changed in the last 2 s is served but not kept (timestamps are coarse).
revalidationTests('fresh files, not kept', {});
// Settle time 0: every read is kept, so these exercise the comparison of stats itself.
revalidationTests('every read kept', { SVR_FILE_CACHE_SETTLE_MS: '0' });

function rssBytes(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
}

describe('memory bound', { skip: process.platform !== 'linux' && 'reads /proc/PID/status' }, () => {
  test('300 distinct 1 MiB files through a 4 MiB cache: the worker does not keep them', async () => {
    const MiB = 1024 * 1024;
    const COUNT = 300;
    const srv = await startServer({
      args: ['--single-threaded'], // the server process is the worker
      env: { SVR_FILE_CACHE_SETTLE_MS: '0' },
      config: { fileCacheMaxBytes: 4 * MiB, fileCacheMaxFileSize: 2 * MiB, enableLogging: false },
      files: { 'f0.bin': Buffer.alloc(MiB, 1) },
    });
    try {
      // hard links: 300 paths (300 cache keys) for one file on disk
      for (let i = 1; i < COUNT; i++) fs.linkSync(path.join(srv.root, 'f0.bin'), path.join(srv.root, `f${i}.bin`));
      for (let i = 0; i < 5; i++) assert.equal((await request(`${srv.url}/f${i}.bin`)).body.length, MiB); // warm up
      const before = rssBytes(srv.pid);
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < COUNT; i += 10) {
          const batch = [];
          for (let j = i; j < i + 10; j++) batch.push(request(`${srv.url}/f${j}.bin`));
          for (const res of await Promise.all(batch)) assert.equal(res.body.length, MiB);
        }
      }
      const grown = rssBytes(srv.pid) - before;
      // Kept, the files would add 300 MiB; bounded, the cache holds 4 MiB plus garbage not yet collected.
      assert.ok(grown < 150 * MiB, `RSS grew by ${(grown / MiB).toFixed(0)} MiB`);
    } finally {
      await srv.stop();
    }
  });
});

describe('FileCache (unit)', () => {
  let dir;
  before(() => { dir = makeTempDir('svr-file-cache-'); });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  function countingCache(options) {
    const cache = new FileCache(options);
    const read = cache.readFile;
    cache.reads = 0;
    cache.readFile = (p) => { cache.reads++; return read(p); };
    return cache;
  }

  test('content read within the settle time of a change is served but not kept', async () => {
    const file = path.join(dir, 'fresh.txt');
    fs.writeFileSync(file, A);
    const cache = countingCache({ settleMs: 60 * 1000 });
    const stats = fs.statSync(file);
    const first = await cache.content(cache.entry(file, stats));
    assert.equal(first.toString(), A);
    assert.equal(cache.kept(cache.entry(file, stats)), undefined);
    const second = await cache.content(cache.entry(file, stats));
    assert.equal(cache.reads, 2);
    assert.equal(second, first, 'the same bytes read again give the same Buffer (what was derived from it stays usable)');
    fs.writeFileSync(file, B); // possibly within the same timestamp tick: same stats, other bytes
    const third = await cache.content(cache.entry(file, fs.statSync(file)));
    assert.equal(third.toString(), B);
    assert.notEqual(third, first);
  });

  test('settled content is kept until the stats change', async () => {
    const file = path.join(dir, 'kept.txt');
    fs.writeFileSync(file, A);
    const cache = countingCache({ settleMs: 0, now: () => Date.now() + 1000 });
    const stats = fs.statSync(file);
    await cache.content(cache.entry(file, stats));
    assert.equal((await cache.content(cache.entry(file, fs.statSync(file)))).toString(), A);
    assert.equal(cache.reads, 1);
    writeWithNewCtime(file, B, stats.ctimeMs);
    assert.equal((await cache.content(cache.entry(file, fs.statSync(file)))).toString(), B);
    assert.equal(cache.reads, 2);
  });

  test('a file that changes while it is read is not kept: content() gives null and drops the entry', async () => {
    const file = path.join(dir, 'changing.txt');
    fs.writeFileSync(file, A);
    const stats = fs.statSync(file);
    // settled at once, so only the change during the read keeps the content out of the cache
    const cache = countingCache({ settleMs: 0, now: () => Date.now() + 1000 });
    // The change lands between the read of the bytes and the fstat that ends it, deterministically:
    // the read returns the old bytes with the stats of the file as it is after the change.
    const read = cache.readFile;
    cache.readFile = async (p) => {
      const got = await read(p);
      writeWithNewCtime(file, B, stats.ctimeMs);
      return { data: got.data, stats: fs.statSync(file) };
    };
    const entry = cache.entry(file, stats);
    assert.equal(await cache.content(entry), null);
    assert.equal(cache.kept(entry), undefined);
    assert.equal(cache.map.has(file), false);
    assert.equal(cache.bytes, 0);
    cache.readFile = read;
    assert.equal((await cache.content(cache.entry(file, fs.statSync(file)))).toString(), B);
  });

  test('the byte budget is never exceeded and the least recently used file goes first', async () => {
    const cache = countingCache({ maxBytes: 40000, maxFileSize: 20000, settleMs: 0, now: () => Date.now() + 1000 });
    const files = [];
    for (let i = 0; i < 10; i++) {
      const file = path.join(dir, `lru${i}.txt`);
      fs.writeFileSync(file, String(i).repeat(10000));
      files.push(file);
    }
    const touch = async (file) => cache.content(cache.entry(file, fs.statSync(file)));
    for (const file of files) {
      await touch(file);
      assert.ok(cache.bytes <= 40000, `${cache.bytes} bytes kept`);
    }
    const reads = cache.reads;
    await touch(files[9]); // most recent: still kept
    assert.equal(cache.reads, reads);
    await touch(files[0]); // long evicted: read again
    assert.equal(cache.reads, reads + 1);
  });

  test('a file larger than maxFileSize is not something callers keep', () => {
    const cache = new FileCache({ maxBytes: 1000, maxFileSize: 100 });
    assert.equal(cache.fits(100), true);
    assert.equal(cache.fits(101), false);
    assert.equal(new FileCache({ maxBytes: 50, maxFileSize: 100 }).fits(51), false);
  });
});

describe('a file response for a file that has not settled (unit)', () => {
  const { createResponder } = require('../../../lib/pipeline/static/respond');
  let dir;
  before(() => { dir = makeTempDir('svr-respond-'); });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  function fakeRes() {
    const headers = {};
    return {
      headersSent: false, status: 0, body: null,
      getHeader: (n) => headers[n.toLowerCase()],
      setHeader: (n, v) => { headers[n.toLowerCase()] = v; },
      writeHead(status, h) { this.status = status; Object.assign(this.headers, h); this.headersSent = true; return this; },
      end(body) { this.body = body; },
      headers,
    };
  }

  test('is read on every request, but compressed again only when its bytes change', async () => {
    const file = path.join(fs.realpathSync(dir), 'fresh.js');
    fs.writeFileSync(file, 'let a = 1;\n'.repeat(300));
    const config = { enableCompression: true, dontCompress: [], fileCacheMaxBytes: 1 << 25, fileCacheMaxFileSize: 1 << 20 };
    const { createWebRoot } = require('../../../lib/pipeline/web-root');
    const site = { config, headers: { fixed: [], withPath: [] }, sendError: () => assert.fail('no error expected'), webRoot: createWebRoot(fs.realpathSync(dir)) };
    const hot = createResponder(site, { isHidden: () => false });
    let compressions = 0;
    const compress = hot.compression.compress;
    hot.compression.compress = (...args) => { compressions++; return compress(...args); };
    const first = fs.statSync(file);
    // Two writes within one timestamp tick leave the same stats: simulate that deterministically by
    // reporting the first stats for every later read of the file.
    const readFile = hot.cache.readFile;
    hot.cache.readFile = async (p) => ({ data: (await readFile(p)).data, stats: first });
    const get = async () => {
      const res = fakeRes();
      const req = { method: 'GET', headers: { 'accept-encoding': 'br' }, svr: {} };
      await hot.respond(req, res, { real: file, rel: 'fresh.js', stats: first });
      assert.equal(res.status, 200);
      return zlib.brotliDecompressSync(res.body).toString();
    };
    assert.equal(await get(), 'let a = 1;\n'.repeat(300));
    assert.equal(await get(), 'let a = 1;\n'.repeat(300));
    assert.equal(compressions, 1);
    fs.writeFileSync(file, 'let b = 2;\n'.repeat(300)); // same size (and, simulated, the same stats)
    assert.equal(await get(), 'let b = 2;\n'.repeat(300));
    assert.equal(compressions, 2);
  });
});
