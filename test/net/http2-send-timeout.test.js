'use strict';
// The HTTP/2 send timeout's bookkeeping (net/http2-send-timeout.js) on stand-in sessions, streams
// and sockets, with a mocked clock: which streams and connections the sweep resets and when, and
// how writes are handed to Node (in order, whole, at most PIECE_BYTES at a time). The real thing,
// against svr's pipeline: limits-h2-send-timeout.test.js.
const test = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const { watchSends, PIECE_BYTES } = require('../../lib/net/http2-send-timeout');
const { trackSessions } = require('../../lib/net/http2-sessions');

const TIMEOUT_MS = 1000;
const SWEEP_MS = 100;

// What Node's Http2Stream does with a write, recorded: each write to Node waits in `inFlight` until
// the test lets it out (out()), as a write waits for the client's window.
class FakeStream extends EventEmitter {
  constructor() {
    super();
    this.handed = []; // one entry per write to Node: the bytes of it
    this.inFlight = null;
    this.waiting = 0; // bytes written to the stream and not yet out (what bufferSize says)
    this.resets = [];
    this.destroyed = false;
  }

  get bufferSize() { return this.waiting; }

  _write(chunk, encoding, cb) {
    this.handed.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
    this.inFlight = cb;
  }

  _writev(entries, cb) {
    this.handed.push(Buffer.concat(entries.map((e) => (typeof e.chunk === 'string' ? Buffer.from(e.chunk, e.encoding) : e.chunk))));
    this.inFlight = cb;
  }

  // What Writable does: one _write or _writev at a time, the next once the callback ran.
  write(chunks) {
    this.waiting += chunks.reduce((n, c) => n + Buffer.byteLength(c), 0);
    return new Promise((resolve) => {
      const entries = chunks.map((chunk) => ({ chunk, encoding: typeof chunk === 'string' ? 'utf8' : 'buffer' }));
      entries.allBuffers = chunks.every((c) => typeof c !== 'string');
      const done = (err) => { this.waiting = 0; resolve(err); };
      if (chunks.length === 1) this._write(entries[0].chunk, entries[0].encoding, done);
      else this._writev(entries, done);
    });
  }

  out() {
    const cb = this.inFlight;
    this.inFlight = null;
    cb();
  }

  close(code) { this.resets.push(code); }
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}

function fakeSession(socket) {
  const session = new EventEmitter();
  session.closed = false;
  session.destroyed = false;
  session.socket = socket;
  return session;
}

function fakeSocket() {
  return {
    bytesWritten: 0,
    destroyed: false,
    _handle: { writeQueueSize: 0 },
    resets: 0,
    on() {},
    resetAndDestroy() { this.resets++; this.destroyed = true; },
  };
}

// A watched session with `streams` streams, and the sweep run every SWEEP_MS (the mocked clock
// enabled once per test).
function watched(t, { socket = null, streams = 1 } = {}) {
  if (!t.clockMocked) t.mock.timers.enable({ apis: ['setInterval', 'Date'] });
  t.clockMocked = true;
  const sessions = new Set();
  const sends = watchSends(sessions, TIMEOUT_MS);
  const session = fakeSession(socket);
  sessions.add(session);
  sends.session(session);
  const list = Array.from({ length: streams }, () => {
    const stream = new FakeStream();
    sends.stream(session, stream);
    stream.on('close', () => sends.streamClosed(stream)); // as http2-sessions.js's listener does
    return stream;
  });
  const timer = setInterval(() => sends.sweep(Date.now()), SWEEP_MS);
  t.after(() => clearInterval(timer));
  return { session, sends, streams: list };
}

// The mocked clock, a sweep at a time (Node 20's mocked Date reads the end of a tick in every
// timer the tick runs).
function tick(t, ms) {
  for (let elapsed = 0; elapsed < ms; elapsed += SWEEP_MS) t.mock.timers.tick(SWEEP_MS);
}

test('a stream whose waiting output does not move is reset after the timeout, not before', (t) => {
  const { streams: [stream] } = watched(t);
  stream.write([Buffer.alloc(1000)]);
  tick(t, TIMEOUT_MS);
  assert.deepEqual(stream.resets, [], 'not before the timeout');
  tick(t, 200);
  assert.deepEqual(stream.resets, [0x8], 'RST_STREAM CANCEL');
  assert.equal(stream.destroyed, true, 'and destroyed at once');
});

test('a stream with nothing waiting is never reset, however long it is quiet; its wait starts with its next write', (t) => {
  const { streams: [stream] } = watched(t);
  tick(t, 10 * TIMEOUT_MS);
  assert.deepEqual(stream.resets, []);
  stream.write(['data: next\n\n']);
  tick(t, TIMEOUT_MS - 200);
  assert.deepEqual(stream.resets, [], 'the quiet time before the write does not count');
  tick(t, 400);
  assert.deepEqual(stream.resets, [0x8]);
});

test('a large write moves a piece at a time: a client taking a piece per sweep is never cut', async (t) => {
  const { streams: [stream] } = watched(t);
  const body = Buffer.alloc(40 * PIECE_BYTES);
  for (let i = 0; i < body.length; i++) body[i] = i % 251;
  const written = stream.write([body]);
  for (let piece = 0; piece < 40; piece++) {
    tick(t, SWEEP_MS);
    stream.out();
  }
  await written;
  assert.deepEqual(stream.resets, [], `40 pieces over ${40 * SWEEP_MS} ms, a timeout of ${TIMEOUT_MS} ms`);
  assert.equal(stream.handed.length, 40);
  assert.ok(stream.handed.every((piece) => piece.length === PIECE_BYTES));
  assert.ok(Buffer.concat(stream.handed).equals(body), 'every byte, in order');
});

// A stream given to the send timeout's pacing, outside any sweep.
function pacedStream() {
  const sends = watchSends(new Set(), TIMEOUT_MS);
  const session = fakeSession(null);
  sends.session(session);
  const stream = new FakeStream();
  sends.stream(session, stream);
  return stream;
}

test('buffered writes Node would take together go in pieces of at most PIECE_BYTES, strings too; small ones as they are', async () => {
  const stream = pacedStream();
  const chunks = Array.from({ length: 100 }, (_, i) => (i % 2 ? Buffer.alloc(3000, i) : 'é'.repeat(1500))); // 3,000 bytes each
  const written = stream.write(chunks);
  while (stream.inFlight !== null) stream.out(); // each piece out, the next handed over then
  await written;
  assert.equal(stream.handed.length, Math.ceil(300000 / PIECE_BYTES));
  assert.ok(stream.handed.every((piece) => piece.length <= PIECE_BYTES));
  assert.ok(Buffer.concat(stream.handed).equals(Buffer.concat(chunks.map((c) => Buffer.from(c)))), 'every byte, in order');

  const small = pacedStream();
  const one = Buffer.alloc(1000);
  const single = small.write([one]);
  small.out();
  await single;
  assert.equal(small.handed[0], one, 'a small write is handed over as it is');
  const batch = small.write([Buffer.alloc(1000), Buffer.alloc(2000)]);
  small.out();
  await batch;
  assert.equal(small.handed.length, 2, 'a small batch in one write');
});

test('a connection whose bytes wait in its socket and do not move is reset after the timeout; one that moves is not', (t) => {
  const stuck = fakeSocket();
  watched(t, { socket: stuck, streams: 0 });
  const moving = fakeSocket();
  watched(t, { socket: moving, streams: 0 });
  stuck._handle.writeQueueSize = 16384;
  moving._handle.writeQueueSize = 16384;
  for (let i = 0; i < 30; i++) {
    moving.bytesWritten += 100;
    tick(t, SWEEP_MS);
  }
  assert.equal(stuck.resets, 1, 'reset (a TCP reset: its descriptor goes even if nothing can be written)');
  assert.equal(moving.resets, 0);
});

test('a closing session with no stream left is reset when it has not closed within the timeout; a closing one with a quiet stream is not', (t) => {
  const socket = fakeSocket();
  const { session } = watched(t, { socket, streams: 0 });
  const busySocket = fakeSocket();
  const { session: busy } = watched(t, { socket: busySocket, streams: 1 });
  tick(t, 5 * TIMEOUT_MS);
  assert.equal(socket.resets, 0, 'an open session with nothing to send is left to the idle GOAWAY');
  session.closed = true;
  busy.closed = true;
  tick(t, TIMEOUT_MS + 200);
  assert.equal(socket.resets, 1);
  assert.equal(busySocket.resets, 0, 'its stream (a long poll) may go on after a GOAWAY');
});

test('trackSessions: one sweep per server whatever the number of streams, none with sendTimeoutMs 0', (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout', 'Date'] });
  const counted = { intervals: 0 };
  const mocked = globalThis.setInterval;
  globalThis.setInterval = (...args) => { counted.intervals++; return mocked(...args); };
  t.after(() => { globalThis.setInterval = mocked; });
  const server = new EventEmitter();
  trackSessions(server, { idleMs: 0, maxStreams: 0, sendTimeoutMs: TIMEOUT_MS });
  const session = fakeSession(null);
  server.emit('session', session);
  for (let i = 0; i < 100; i++) {
    const stream = new FakeStream();
    session.emit('stream', stream);
    stream.emit('close');
  }
  assert.equal(counted.intervals, 1);
  trackSessions(new EventEmitter(), { idleMs: 0, maxStreams: 0, sendTimeoutMs: 0 });
  assert.equal(counted.intervals, 1, 'no sweep without a send timeout');
  server.emit('close');
});
