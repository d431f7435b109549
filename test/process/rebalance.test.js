'use strict';
// balanceConnections (lib/process/rebalance.js): under schedulingPolicy "none", a worker holding
// more than its share of the busy keep-alive connections is asked to close the extra ones
// (Connection: close at their next request), so the client reconnects to the idle worker.
// The imbalance is made on purpose: while worker X runs a 500 ms script, only worker Y can accept,
// so four new connections all land on Y.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startServer } = require('../support/helpers');
const { planShedding, Rebalancer, SETTLE_MS } = require('../../lib/process/rebalance');

const SCRIPT = `
const url = new URL(req.url, 'http://x');
if (url.pathname === '/pid' || url.pathname === '/block') {
  disableEndElseCallbackExecute = true;
  const ms = Number(url.searchParams.get('ms') || 0);
  if (ms > 0) console.log('blocking ' + process.pid);
  const until = Date.now() + ms;
  while (Date.now() < until) { /* keep this worker from accepting */ }
  const body = String(process.pid);
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': body.length });
  res.end(body);
}
`;
// A short heartbeat (workerStallTimeout / 4 = 300 ms) so that balancing acts within a second.
const CONFIG = { workers: 2, workerStallTimeout: 1200, enableLogging: false };

// One keep-alive connection, one request at a time: -> { pid, closing }. `closing` stays true
// once a response said Connection: close.
class Connection {
  constructor(port) {
    this.socket = net.connect(port, '127.0.0.1');
    this.buffer = '';
    this.waiting = null;
    this.closing = false;
    this.socket.setEncoding('utf8');
    this.socket.on('data', (chunk) => { this.buffer += chunk; this.check(); });
    const fail = (error) => this.waiting && this.waiting.reject(error);
    this.socket.on('error', fail);
    this.socket.on('close', () => fail(new Error('the server closed the connection without answering')));
    this.opened = new Promise((resolve) => this.socket.once('connect', resolve));
  }

  get(path) {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    });
  }

  check() {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end === -1 || !this.waiting) return;
    const head = this.buffer.slice(0, end);
    const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (this.buffer.length < end + 4 + length) return;
    const body = this.buffer.slice(end + 4, end + 4 + length);
    this.buffer = this.buffer.slice(end + 4 + length);
    const { resolve } = this.waiting;
    this.waiting = null;
    if (/\r\nconnection: *close/i.test(head)) this.closing = true;
    resolve({ pid: Number(body), closing: this.closing });
  }

  close() {
    this.socket.destroy();
  }
}

async function openOn(port, count) {
  const connections = Array.from({ length: count }, () => new Connection(port));
  await Promise.all(connections.map((c) => c.opened));
  return connections;
}

// Worker X busy for 500 ms with one connection; four connections opened meanwhile go to Y.
async function makeImbalance(server) {
  const [first] = await openOn(server.port, 1);
  const x = (await first.get('/pid')).pid;
  const since = server.stdout().length;
  const blocked = first.get('/block?ms=500');
  await server.waitForLog(new RegExp(`blocking ${x}`), 'stdout', since);
  const others = await openOn(server.port, 4);
  const pids = await Promise.all(others.map((c) => c.get('/pid')));
  await blocked;
  return { x, first, others, pids: pids.map((p) => p.pid) };
}

// Requests on every connection in turn until one is answered with Connection: close (or the
// deadline): -> the connection that was closed, or null. (The order may already have come
// while the imbalance was being made.) A 5 ms pause between rounds: each connection still has a
// request every few ms, so it counts as busy (a request within the heartbeat interval, 300 ms)
// and sees an order at once, for a fraction of the CPU of back-to-back requests.
const ROUND_PAUSE_MS = 5;
async function untilOneCloses(connections, deadlineMs) {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const closed = connections.find((c) => c.closing);
    if (closed || Date.now() > deadline) return closed || null;
    for (const c of connections) {
      if ((await c.get('/pid')).closing) break;
    }
    await new Promise((resolve) => setTimeout(resolve, ROUND_PAUSE_MS));
  }
}

test('planShedding: only a worker above its share and 2 above the least loaded sheds', () => {
  const plan = (...counts) => [...planShedding(new Map(counts.map((n, i) => [`w${i}`, n])))];
  assert.deepEqual(plan(5, 0), [['w0', 2]]);
  assert.deepEqual(plan(4, 1), [['w0', 1]]);
  assert.deepEqual(plan(3, 2), []);
  assert.deepEqual(plan(21, 11), [['w0', 5]]);
  assert.deepEqual(plan(0, 0), []);
  assert.deepEqual(plan(7), [], 'one worker: nowhere to move to');
  assert.deepEqual(plan(6, 0, 0), [['w0', 4]]);
});

test('Rebalancer: orders only once every serving worker has reported, then lets the order settle', () => {
  const r = new Rebalancer({ intervalMs: () => 1000 });
  r.report('a', 5, 1000);
  assert.deepEqual(r.decide(['a', 'b'], 1040), [], 'b has not reported');
  r.report('b', 0, 1010);
  assert.deepEqual(r.decide(['a', 'b'], 1050), [['a', 2]]);
  r.report('a', 5, 1100);
  assert.deepEqual(r.decide(['a', 'b'], 1140), [], `settling: the order is carried out within ${SETTLE_MS} ms`);
  assert.deepEqual(r.decide(['a', 'b'], 1050 + SETTLE_MS), [['a', 2]], 'still 5 and 0 once settled');
  r.report('a', 5, 4000);
  assert.deepEqual(r.decide(['a', 'b'], 4040), [], 'b is silent for more than 2 intervals');
  r.forget('b');
  assert.deepEqual(r.decide(['a'], 4040), [], 'a lone worker');
  r.report('c', 0, 4050);
  assert.deepEqual(r.decide(['a', 'c'], 4090), [['a', 2]], 'c reported before it served: its count stands');
});

test('a worker holding 4 of 5 busy connections closes one, and the client lands on the idle worker', async () => {
  const server = await startServer({ config: CONFIG, files: { 'serverSideScript.js': SCRIPT } });
  const open = [];
  try {
    const { x, first, others, pids } = await makeImbalance(server);
    open.push(first, ...others);
    assert.ok(pids.every((pid) => pid !== x), `the four connections should all be on the other worker, got ${pids} (x ${x})`);
    const closed = await untilOneCloses(others, 10000);
    assert.ok(closed, 'no response on the busy worker carried Connection: close within 10 s');
    // Keep the busy worker busy while the client reconnects: the idle one accepts.
    const y = pids[0];
    const since = server.stdout().length;
    const busy = others.find((c) => !c.closing).get('/block?ms=300');
    await server.waitForLog(new RegExp(`blocking ${y}`), 'stdout', since);
    const [again] = await openOn(server.port, 1);
    open.push(again);
    assert.equal((await again.get('/pid')).pid, x, 'the reconnected client should be served by the idle worker');
    assert.equal((await busy).pid, y);
  } finally {
    for (const c of open) c.close();
    await server.stop();
  }
});

// The order follows the imbalance at once: the worker that took the burst says so
// EARLY_BEAT_DELAY_MS after it (process/watchdog.js). The timed beats are a minute apart here
// (SVR_HEARTBEAT_INTERVAL_MS, with the watchdog off), so an order within the test can only have
// come from the early beats: no timing to read.
test('a burst on one worker is evened out at once, not at the next timed heartbeat', async () => {
  const server = await startServer({
    config: { workers: 2, enableLogging: false, workerStallTimeout: 0 },
    files: { 'serverSideScript.js': SCRIPT },
    env: { SVR_HEARTBEAT_INTERVAL_MS: '60000' },
  });
  const open = [];
  try {
    const [first] = await openOn(server.port, 1);
    open.push(first);
    const x = (await first.get('/pid')).pid;
    const since = server.stdout().length;
    const blocked = first.get('/block?ms=1500');
    await server.waitForLog(new RegExp(`blocking ${x}`), 'stdout', since);
    const others = await openOn(server.port, 4);
    open.push(...others);
    const closed = await untilOneCloses(others, 10000);
    assert.ok(closed, 'no response on the busy worker carried Connection: close');
    await blocked;
  } finally {
    for (const c of open) c.close();
    await server.stop();
  }
});

test('balanceConnections: false leaves the connections where they landed', async () => {
  const server = await startServer({ config: { ...CONFIG, balanceConnections: false }, files: { 'serverSideScript.js': SCRIPT } });
  const open = [];
  try {
    const { first, others } = await makeImbalance(server);
    open.push(first, ...others);
    // Ten heartbeat intervals of requests: the balancing would have acted in one or two.
    assert.equal(await untilOneCloses(others, 3000), null);
  } finally {
    for (const c of open) c.close();
    await server.stop();
  }
});
