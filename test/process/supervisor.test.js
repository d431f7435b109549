'use strict';
// The process model: worker count, replacement and backoff, rolling reload under load,
// a broken config on reload, graceful stop, and start-up failures.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { startServer, request, readyWorkerPids, isAlive, runSvr, makeTempDir, getFreePort, waitUntil } = require('../support/helpers');

test('--workers 3 starts three workers', async () => {
  const server = await startServer({ files: { 'index.html': 'x' }, args: ['--workers', '3'] });
  try {
    const pids = readyWorkerPids(server);
    assert.equal(pids.length, 3);
    assert.match(server.stderr().join('\n'), /\(3 workers, primary pid \d+\)/);
    for (const pid of pids) assert.ok(isAlive(pid), `worker ${pid} is alive`);
  } finally {
    await server.stop();
  }
});

test('a worker killed with -9 is replaced at once and the pool is refilled', async () => {
  const server = await startServer({ files: { 'index.html': 'x' }, args: ['--workers', '2'] });
  try {
    const [victim] = readyWorkerPids(server);
    const since = server.stderr().length;
    process.kill(victim, 'SIGKILL');
    await server.waitForLog(new RegExp(`worker ${victim} died \\(signal SIGKILL\\)`), 'stderr', since);
    await server.waitForLog(/starting a replacement worker in 0 ms/, 'stderr', since); // at once: no backoff
    await server.waitForLog(/worker \d+ ready/, 'stderr', since);
    const res = await request(`${server.url}/`);
    assert.equal(res.status, 200);
    const alive = readyWorkerPids(server).filter(isAlive);
    assert.equal(alive.length, 2, 'back to two workers');
  } finally {
    await server.stop();
  }
});

test('a worker that keeps dying young is restarted with growing delays', async () => {
  const server = await startServer({ files: { 'index.html': 'x' }, args: ['--workers', '1'] });
  try {
    const delays = [];
    for (let round = 0; round < 4; round++) {
      const pids = readyWorkerPids(server);
      const since = server.stderr().length;
      process.kill(pids[pids.length - 1], 'SIGKILL');
      const line = await server.waitForLog(/starting a replacement worker in (\d+) ms/, 'stderr', since);
      delays.push(Number(/in (\d+) ms/.exec(line)[1]));
      await server.waitForLog(/worker \d+ ready/, 'stderr', since);
    }
    assert.deepEqual(delays, [0, 100, 200, 400]);
  } finally {
    await server.stop();
  }
});

// Keeps `connections` keep-alive connections busy until stop() is called.
function loadClient(url, connections) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const stats = { ok: 0, failed: [] };
  let running = true;
  async function loop() {
    while (running) {
      try {
        const res = await request(url, { agent });
        if (res.status === 200) stats.ok++;
        else stats.failed.push(`status ${res.status}`);
      } catch (error) {
        stats.failed.push(error.code || error.message);
      }
    }
  }
  const loops = Array.from({ length: connections }, loop);
  return {
    stats,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      agent.destroy();
      return stats;
    },
  };
}

test('rolling reloads under load fail no request, and the new config is visible', async () => {
  const server = await startServer({
    config: { workers: 2, customHeaders: { 'X-Generation': '0' } },
    files: { 'index.html': 'reload me' },
  });
  const load = loadClient(`${server.url}/`, 20);
  try {
    for (let generation = 1; generation <= 3; generation++) {
      server.writeConfig({ workers: 2, customHeaders: { 'X-Generation': String(generation) } });
      const since = server.stderr().length;
      server.signal('SIGHUP');
      await server.waitForLog(/reload complete/, 'stderr', since);
    }
    const before = load.stats.ok;
    assert.ok(await waitUntil(() => load.stats.ok > before + 100), 'the load reached the count in time');
    const stats = await load.stop();
    assert.deepEqual(stats.failed, [], 'no request failed');
    assert.ok(stats.ok > 200, `the load client made requests (${stats.ok})`);
    // A new connection lands on a new worker (a retiring one may still finish old keep-alive requests).
    const res = await request(`${server.url}/`);
    assert.equal(res.headers['x-generation'], '3', 'the last config is the one served');
  } finally {
    await load.stop();
    await server.stop();
  }
});

test('a reload with a broken config keeps serving the old settings and logs why', async () => {
  const server = await startServer({ config: { customHeaders: { 'X-Setting': 'old' } }, files: { 'index.html': 'x' } });
  try {
    const since = server.stderr().length;
    fs.writeFileSync(server.configFile, JSON.stringify({ port: server.port, wwwroot: 'web', workers: 1, customHeaders: { 'X-Setting': 'new' }, enableLogging: 'yes' }));
    server.signal('SIGHUP');
    await server.waitForLog(/reload failed, still serving with the previous config/, 'stderr', since);
    await server.waitForLog(/enableLogging/, 'stderr', since);
    const res = await request(`${server.url}/`);
    assert.equal(res.headers['x-setting'], 'old');
  } finally {
    await server.stop();
  }
});

test('SIGTERM lets a response in flight finish, then exits 0', async () => {
  const big = Buffer.alloc(32 * 1024 * 1024, 'a');
  const server = await startServer({ files: { 'big.bin': big } });
  const body = await new Promise((resolve, reject) => {
    http.get(`${server.url}/big.bin`, (res) => {
      res.pause(); // the 32 MiB cannot fit in socket buffers: the response stays in flight
      const since = server.stderr().length;
      server.signal('SIGTERM');
      server.waitForLog(/SIGTERM: stopping gracefully/, 'stderr', since).then(() => {
        let length = 0;
        res.on('data', (chunk) => { length += chunk.length; });
        res.on('end', () => resolve(length));
        res.on('error', reject);
        res.resume();
      }, reject);
    }).on('error', reject);
  });
  assert.equal(body, big.length, 'the whole body arrived');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
  await server.stop();
});

// Both stops below would wait a minute for an idle connection (60 s announced, 60 s allowed to
// finish): a bound of 30 s tells the two apart however loaded the machine is.
test('SIGTERM closes idle keep-alive connections instead of waiting for them', async () => {
  const server = await startServer({ config: { keepAliveTimeout: 60000, shutdownTimeout: 60000 }, files: { 'index.html': 'x' } });
  const agent = new http.Agent({ keepAlive: true });
  await request(`${server.url}/`, { agent }); // leaves an idle keep-alive connection
  const startedAt = Date.now();
  const { code } = await server.stop();
  assert.equal(code, 0);
  assert.ok(Date.now() - startedAt < 30000, 'stopped without waiting for the idle connection to time out');
  agent.destroy();
});

// One response to `GET /` (whose body is "x") on a raw connection: its head, or an error if the
// connection closes first.
function answerOn(socket) {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk) => {
      text += chunk.toString('latin1');
      if (!text.endsWith('\r\n\r\nx')) return;
      socket.off('data', onData).off('close', onClose).off('end', onClose);
      resolve(text.slice(0, -3));
    };
    const onClose = () => reject(new Error(`the connection closed${text ? ` after ${JSON.stringify(text)}` : ''}`));
    if (socket.destroyed || socket.readableEnded) return onClose(); // closed while idle
    socket.on('data', onData).on('close', onClose).on('end', onClose);
    socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
  });
}

// A drain gives idle connections a second; a client told "Keep-Alive: timeout=N" may reuse its
// connection for N seconds (Node's http.Agent up to N - 1), and one reused as the server closes
// it loses its request. So a reload keeps such a connection as long as it was promised.
test('a reload keeps an idle keep-alive connection for its announced timeout: a request on it is answered', async () => {
  const server = await startServer({ config: { workers: 1, keepAliveTimeout: 10000, customHeaders: { 'X-Generation': 'old' } }, files: { 'index.html': 'x' } });
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => {});
  try {
    const first = await answerOn(socket);
    const answeredAt = Date.now();
    assert.match(first, /\r\nKeep-Alive: timeout=10\r\n/);
    const since = server.stderr().length;
    server.writeConfig({ workers: 1, keepAliveTimeout: 10000, customHeaders: { 'X-Generation': 'new' } });
    server.signal('SIGHUP');
    await server.waitForLog(/reload complete/, 'stderr', since);
    // Idle for longer than the drain's second, and past the drain's start: what waits here is
    // the behaviour under test, not a synchronisation.
    const wait = Math.max(answeredAt + 1500 - Date.now(), 0) + 300;
    await new Promise((resolve) => setTimeout(resolve, wait));
    const second = await answerOn(socket);
    assert.match(second, /^HTTP\/1\.1 200 /);
    assert.match(second, /\r\nX-Generation: old\r\n/i, 'answered by the old worker, on the old connection');
    assert.match(second, /\r\nConnection: close\r\n/, 'and told to move to a new one');
  } finally {
    socket.destroy();
    await server.stop();
  }
});

test('a stop during a reload does not wait for the old worker\'s idle keep-alive connections', async () => {
  const server = await startServer({ config: { workers: 1, keepAliveTimeout: 60000, shutdownTimeout: 60000 }, files: { 'index.html': 'x' } });
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => {});
  try {
    await answerOn(socket); // idle from here, with 60 s announced: the old worker's drain keeps it
    const since = server.stderr().length;
    server.signal('SIGHUP');
    await server.waitForLog(/reload complete/, 'stderr', since);
    const stoppingAt = Date.now();
    const { code } = await server.stop();
    assert.equal(code, 0);
    assert.ok(Date.now() - stoppingAt < 30000, `stopped in ${Date.now() - stoppingAt} ms, without waiting out the announced 60 s`);
  } finally {
    socket.destroy();
    await server.stop();
  }
});

test('a port already in use: exit non-zero with one message naming the port, no restart loop', async () => {
  const blocker = net.createServer();
  const port = await getFreePort();
  await new Promise((resolve) => blocker.listen(port, resolve));
  const dir = makeTempDir();
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port, wwwroot: '.', allowSensitiveFilesInWebRoot: true, workers: 2 }));
  try {
    const { code, stderr } = await runSvr(['--config', configFile]);
    assert.equal(code, 69);
    assert.match(stderr, new RegExp(`port ${port} is already in use`));
    assert.doesNotMatch(stderr, /replacement/);
  } finally {
    blocker.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

