'use strict';
// The HTTP/1.1 send timeout's bookkeeping (net/http1-send-timeout.js) on stand-in sockets whose
// handles say what libuv would (bytes handed to it, bytes still in its write queue), with a mocked
// clock: which connections the sweep closes and when. The real thing, against svr's listeners:
// limits-h1-send-timeout.test.js.
const test = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const { closeStalledSends, stalledSendSweeper, kernelSendQueues, MIN_TAKEN_BYTES } = require('../../lib/net/http1-send-timeout');

const TIMEOUT_MS = 1000;
const SWEEP_MS = 100;

// A socket whose handle took `dispatched` bytes, `queued` of them not yet taken by the kernel;
// `unacked`: what the kernel's send queue holds (the kernel took and the client did not acknowledge).
function fakeSocket() {
  const socket = new EventEmitter();
  socket.destroyed = false;
  socket.unacked = 0;
  socket._handle = { bytesWritten: 0, writeQueueSize: 0 };
  // The application hands `bytes` to the socket; the kernel takes `taken` of them at once.
  socket.write = (bytes, taken = 0) => {
    socket._handle.bytesWritten += bytes;
    socket._handle.writeQueueSize += bytes - taken;
  };
  // The client reads: the kernel takes `bytes` more from the queue.
  socket.take = (bytes) => { socket._handle.writeQueueSize -= bytes; };
  return socket;
}

// Sweeps every SWEEP_MS from `from` to `to` (inclusive), each(now) before each sweep.
function sweepAlong(sweep, from, to, each = () => {}) {
  for (let now = from; now <= to; now += SWEEP_MS) {
    each(now);
    sweep(now);
  }
}

// A sweep over `sockets` whose closes are recorded: closed, socket -> the sweep's time.
// kernel: whether the kernel's send queues can be read (asked: the sockets asked about, per call).
function sweeper(sockets, { kernel = false } = {}) {
  const closed = new Map();
  const asked = [];
  const sendQueues = (list) => {
    asked.push(list);
    return new Map(kernel ? list.map((socket) => [socket, socket.unacked]) : []);
  };
  const sweep = stalledSendSweeper(new Set(sockets), TIMEOUT_MS, (socket) => {
    if (!closed.has(socket)) closed.set(socket, socket.now);
    socket.destroyed = true;
  }, sendQueues);
  return { closed, asked, sweep: (now) => { for (const s of sockets) s.now = now; sweep(now); } };
}

test('a connection whose queued output does not move is closed once it has waited sendTimeout, not before', () => {
  const socket = fakeSocket();
  const { closed, sweep } = sweeper([socket]);
  sweep(0);
  socket.write(8 * 1024 * 1024, 4 * 1024 * 1024); // the kernel's buffers are full, the rest waits
  sweepAlong(sweep, 50, 50 + TIMEOUT_MS - SWEEP_MS);
  assert.equal(closed.size, 0, 'not before sendTimeout');
  sweepAlong(sweep, 50 + TIMEOUT_MS, 50 + 2 * TIMEOUT_MS);
  // The first sweep to see the queue (at 50) starts the clock: closed at 50 + TIMEOUT_MS.
  assert.equal(closed.get(socket), 50 + TIMEOUT_MS);
});

test('a connection with nothing queued is never closed, however long it is quiet', () => {
  const idle = fakeSocket(); // keep-alive between requests, a long poll before its head
  const quiet = fakeSocket(); // an event stream between events: all it wrote went out
  quiet.write(100, 100);
  const { closed, sweep } = sweeper([idle, quiet]);
  sweepAlong(sweep, 0, 10 * TIMEOUT_MS);
  assert.equal(closed.size, 0);
});

test('a slow download is not cut while the kernel takes some of it between sweeps, even within one large write', () => {
  const socket = fakeSocket();
  const { closed, sweep } = sweeper([socket]);
  socket.write(10 * 1024 * 1024, 64 * 1024); // one write (res.end(tenMegabytes)): one Writable callback, at its end
  // The client takes 1 KiB per sweep: 10 KiB/s, 100 s for the write, far longer than sendTimeout.
  sweepAlong(sweep, 0, 20 * TIMEOUT_MS, () => socket.take(1024));
  assert.equal(closed.size, 0);
});

test('output handed over while none goes out is not movement', () => {
  const socket = fakeSocket();
  const { closed, sweep } = sweeper([socket]);
  socket.write(1024 * 1024, 0);
  // Each sweep the application writes more (an event stream to a client that reads nothing):
  // bytes handed to libuv grow, and so does its queue, by the same count.
  sweepAlong(sweep, 0, 2 * TIMEOUT_MS, () => socket.write(1024, 0));
  assert.equal(closed.get(socket), TIMEOUT_MS);
});

test('the clock starts again when the queue empties', () => {
  const socket = fakeSocket();
  const { closed, sweep } = sweeper([socket]);
  socket.write(1000, 0);
  sweepAlong(sweep, 0, TIMEOUT_MS - SWEEP_MS); // waited 900 ms
  socket.take(1000); // all out
  sweep(TIMEOUT_MS);
  socket.write(1000, 0); // and something waits again
  sweepAlong(sweep, TIMEOUT_MS + SWEEP_MS, 2 * TIMEOUT_MS);
  assert.equal(closed.size, 0, 'the wait before the queue emptied does not count');
  sweepAlong(sweep, 2 * TIMEOUT_MS + SWEEP_MS, 3 * TIMEOUT_MS);
  assert.equal(closed.get(socket), 2 * TIMEOUT_MS + SWEEP_MS);
});

test('a client that acknowledges MIN_TAKEN_BYTES per half timeout while the kernel takes nothing is not cut; one that takes less is', () => {
  const reader = fakeSocket(); // the kernel takes more only once a third of its buffer is free
  const trickle = fakeSocket(); // reads a few bytes now and then (slowhttptest -X)
  const { closed, asked, sweep } = sweeper([reader, trickle], { kernel: true });
  for (const socket of [reader, trickle]) {
    socket.write(8 * 1024 * 1024, 4 * 1024 * 1024);
    socket.unacked = 4 * 1024 * 1024;
  }
  sweepAlong(sweep, 0, 10 * TIMEOUT_MS, () => {
    reader.unacked -= MIN_TAKEN_BYTES / 4; // MIN_TAKEN_BYTES per half timeout (5 sweeps), and a bit
    trickle.unacked -= 32;
  });
  assert.equal(closed.has(reader), false, 'the reader is not cut');
  assert.equal(closed.get(trickle), TIMEOUT_MS, 'the trickle is cut at the timeout');
  // Asked about only at half the timeout and at the timeout, never at each sweep.
  assert.deepEqual(asked.slice(0, 2).map((list) => list.length), [2, 2]);
  assert.ok(asked.length <= 2 * 10 + 1, `${asked.length} reads for 10 timeouts`);
});

test('late sweeps (a busy event loop): a client gets half the timeout to show it takes bytes, counted from when its count was read', () => {
  const reader = fakeSocket();
  const { closed, sweep } = sweeper([reader], { kernel: true });
  reader.write(8 * 1024 * 1024, 4 * 1024 * 1024);
  reader.unacked = 4 * 1024 * 1024;
  sweepAlong(sweep, 0, 400);
  // The loop was busy: the next sweeps come at 1450 (half the timeout is past: the count is read)
  // and at 1500 (the timeout is past, but only 50 ms since the count).
  reader.unacked -= 700 * 1024 * 0.6; // what it took meanwhile: nothing the sweeps can see
  sweep(1450);
  reader.unacked -= 1024;
  sweep(1500);
  assert.equal(closed.size, 0, 'not judged on 50 ms');
  sweepAlong(sweep, 1600, 2000, () => { reader.unacked -= MIN_TAKEN_BYTES / 4; });
  assert.equal(closed.size, 0, 'judged on the half timeout after its count was read: it moves');
  sweepAlong(sweep, 2100, 4000);
  assert.ok(closed.get(reader) >= 2000 + TIMEOUT_MS, `cut a timeout after it stopped taking: ${closed.get(reader)}`);
});

test('without the kernel\'s count (not Linux), a connection whose write queue does not move is cut at the timeout', () => {
  const reader = fakeSocket();
  reader.write(8 * 1024 * 1024, 4 * 1024 * 1024);
  const { closed, sweep } = sweeper([reader], { kernel: false });
  sweepAlong(sweep, 0, 2 * TIMEOUT_MS, () => { reader.unacked -= MIN_TAKEN_BYTES; });
  assert.equal(closed.get(reader), TIMEOUT_MS);
});

test('kernelSendQueues reads a real socket\'s queue; a socket it cannot name is left out', { skip: process.platform !== 'linux' }, async (t) => {
  const net = require('node:net');
  const { once } = require('node:events');
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const client = net.connect(server.address().port, '127.0.0.1');
  const [accepted] = await once(server, 'connection');
  t.after(() => { client.destroy(); accepted.destroy(); });
  client.pause(); // reads nothing: what the server writes stays in its kernel send queue
  accepted.write(Buffer.alloc(8 * 1024 * 1024));
  const bare = fakeSocket();
  const queues = kernelSendQueues([accepted, bare]);
  assert.ok(queues.get(accepted) > 64 * 1024, `the accepted socket's send queue: ${queues.get(accepted)} bytes`);
  assert.equal(queues.has(bare), false);
});

test('a destroyed socket or one without a handle is left alone', () => {
  const gone = fakeSocket();
  gone.write(1000, 0);
  gone.destroyed = true;
  const bare = fakeSocket();
  bare._handle = null;
  const { closed, sweep } = sweeper([gone, bare]);
  sweepAlong(sweep, 0, 3 * TIMEOUT_MS);
  assert.equal(closed.size, 0);
});

test('closeStalledSends: 0 sets up nothing; connections are watched while open; HTTP/2 ones on the TLS listener are not', (t) => {
  const plain = new EventEmitter();
  assert.equal(closeStalledSends(plain, 0), null, '0: no limit');
  assert.equal(plain.listenerCount('connection'), 0);

  const watched = closeStalledSends(plain, TIMEOUT_MS);
  t.after(() => plain.emit('close')); // clears the sweep's interval
  const socket = fakeSocket();
  plain.emit('connection', socket);
  assert.ok(watched.sockets.has(socket));
  socket.emit('close');
  assert.equal(watched.sockets.size, 0, 'forgotten once closed');

  const secure = new EventEmitter();
  const tls = closeStalledSends(secure, TIMEOUT_MS, { secure: true });
  t.after(() => secure.emit('close'));
  assert.equal(secure.listenerCount('connection'), 0, 'TLS connections are watched once their handshake is done');
  const h1 = fakeSocket();
  h1.alpnProtocol = 'http/1.1';
  const h2 = fakeSocket();
  h2.alpnProtocol = 'h2';
  secure.emit('secureConnection', h1);
  secure.emit('secureConnection', h2);
  assert.deepEqual([...tls.sockets], [h1]);
});
