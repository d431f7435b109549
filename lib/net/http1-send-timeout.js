'use strict';
// sendTimeout for HTTP/1.1, plain and over TLS: a connection whose output waits in its socket (the
// client takes none of it) and has not moved for the timeout is reset and destroyed, as nginx's
// send_timeout closes it. Destroying the socket closes the response on it, and that destroys the
// response's stream: the file it reads is closed, its compression slot and buffers given back.
// Before, a client that asked for a large file and never read held its connection and the file for
// ever (slowhttptest -X): two descriptors, counted against maxConnections, until enough of them
// filled it.
//
// What "moved" is, per connection, in two steps:
// - the bytes the kernel took from the socket: the handle's bytes handed to libuv (bytesWritten)
//   less those still in libuv's write queue (writeQueueSize, which Node's own socket timeout reads
//   too). libuv lowers the queue as each part of a write goes to the kernel, so this moves within a
//   single large write (a script's res.end(tenMegabytes)) too; the socket's public counts
//   (bytesWritten less writableLength) move only as whole writes end. It is read at every sweep,
//   and is all nginx's send_timeout looks at. But the kernel takes more only once a third of its
//   send buffer is free again (epoll reports the socket writable then), and Linux grows that buffer
//   up to 4 MiB (tcp_wmem): on loopback it took 1.4 MB at a time, one take every 2.2 s for a
//   client reading 640 KiB/s.
// - so a connection whose write queue has not moved for half the timeout has its kernel send queue
//   read (Linux: tx_queue in /proc/self/net/tcp, the bytes not yet acknowledged by the client),
//   and again at the timeout (half a timeout after that first read at least, should the sweeps
//   come late): if the client acknowledged MIN_TAKEN_BYTES meanwhile, it is moving
//   and its clock starts again; else it is cut. 32 KiB per half timeout is what HTTP/2 streams must
//   take (64 KiB per timeout, http2-send-timeout.js): about 1 KiB/s at the default 60 s, so a
//   client that reads a few bytes now and then (slowhttptest -X) is still cut. Those reads cost a
//   readlink per connection and a read of the table per sweep, only for connections that waited
//   that long; where they fail (not Linux) a connection is judged by its write queue alone.
// Over TLS the counts are those of the accepted TCP socket, under the TLS one (accepted-socket.js):
// the encrypted bytes, which is what the client is slow to take. A connection with nothing in its
// write queue is never cut, however long it is quiet: a long poll, an event stream between events,
// a response waiting on its upstream, a keep-alive connection between requests, a tunnel with
// nothing to send. (A tunnel whose bytes to the client wait and do not move is cut like a
// response.)
//
// An HTTP/2 connection on the secure listener is left to http2-send-timeout.js, which resets its
// streams one by one.
//
// Cost: per connection a set entry, five own properties and a 'close' listener (one function for
// all); nothing per request. No timer per connection: one sweep per listener every sweepEveryMs (a
// tenth of the timeout, between 50 ms and a second) over the listener's open connections.
//
//   closeStalledSends(server, timeoutMs, { secure }) -> { sockets, sweep(now) } | null
//     server: an http, https or http2 secure server; secure: it is a TLS one (its connections are
//     watched from 'secureConnection'). null when timeoutMs is 0 (no limit).
//   stalledSendSweeper(sockets, timeoutMs, close, sendQueues) -> sweep(now)   (exported for the tests)
//   kernelSendQueues(sockets) -> Map socket -> bytes in its kernel send queue (Linux)

const fs = require('node:fs');
const { acceptedSocket } = require('./accepted-socket');
const { closeNow } = require('./silent-connections');
const { sweepEveryMs } = require('./keep-alive');

const kSends = Symbol('svr.h1Sends'); // the set of the listener's watched sockets
const kSent = Symbol('svr.h1Sent'); // the bytes the kernel had taken at the last sweep; -1: nothing waited
const kStillSince = Symbol('svr.h1StillSince'); // since when its waiting output has not moved
const kUnacked = Symbol('svr.h1Unacked'); // the kernel's send queue at half the timeout; -1: not read, -2: not known
const kUnackedAt = Symbol('svr.h1UnackedAt'); // when it was read

// What a client must take while the kernel holds the connection's bytes: this many per half
// timeout, as HTTP/2 streams must take 64 KiB per timeout (http2-send-timeout.js's PIECE_BYTES).
const MIN_TAKEN_BYTES = 32 * 1024;

function closeStalledSends(server, timeoutMs, { secure = false } = {}) {
  if (!(timeoutMs > 0)) return null;
  const sockets = new Set();
  const watch = (socket) => {
    if (secure && socket.alpnProtocol === 'h2') return; // http2-send-timeout.js
    socket[kSends] = sockets;
    socket[kSent] = -1;
    socket[kStillSince] = 0;
    socket[kUnacked] = -1;
    socket[kUnackedAt] = 0;
    sockets.add(socket);
    socket.on('close', forget);
  };
  server.on(secure ? 'secureConnection' : 'connection', watch);
  const sweep = stalledSendSweeper(sockets, timeoutMs, closeStalled);
  const timer = setInterval(() => sweep(Date.now()), sweepEveryMs(timeoutMs));
  timer.unref();
  server.on('close', () => clearInterval(timer));
  return { sockets, sweep };
}

// A watched socket's 'close' listener (this: the socket).
function forget() {
  this[kSends].delete(this);
}

// sendQueues(sockets) -> Map socket -> the bytes its kernel send queue holds (those the client has
// not acknowledged), for the sockets the kernel tells of.
function stalledSendSweeper(sockets, timeoutMs, close, sendQueues = kernelSendQueues) {
  const halfMs = timeoutMs / 2;
  return function sweep(now) {
    let halfway = null;
    let due = null;
    for (const socket of sockets) {
      const waited = stillFor(socket, now);
      if (waited < halfMs) continue;
      if (socket[kUnacked] === -1) (halfway || (halfway = [])).push(socket);
      // Judged once half the timeout has passed since the count it is judged against, even when
      // the sweeps came late (a busy event loop) and that count was read later than half way.
      else if (waited >= timeoutMs && now - socket[kUnackedAt] >= halfMs) (due || (due = [])).push(socket);
    }
    if (halfway === null && due === null) return;
    const queues = sendQueues([...(halfway || []), ...(due || [])]);
    if (halfway !== null) {
      for (const socket of halfway) {
        socket[kUnacked] = queues.has(socket) ? queues.get(socket) : -2;
        socket[kUnackedAt] = now;
      }
    }
    if (due === null) return;
    for (const socket of due) {
      const then = socket[kUnacked];
      const taken = then >= 0 && queues.has(socket) ? then - queues.get(socket) : 0;
      if (taken >= MIN_TAKEN_BYTES) { // the client reads, slower than the kernel's buffer empties
        socket[kStillSince] = now;
        socket[kUnacked] = -1;
      } else {
        close(socket);
      }
    }
  };
}

// How long the output waiting in the socket's write queue has not moved (0: it moved since the
// last sweep, or nothing waits). The first sweep to see output waiting starts the clock.
function stillFor(socket, now) {
  if (socket.destroyed) return 0;
  const handle = (acceptedSocket(socket) || socket)._handle;
  const queued = handle ? handle.writeQueueSize : 0;
  if (!(queued > 0)) {
    socket[kSent] = -1;
    return 0;
  }
  const sent = handle.bytesWritten - queued;
  if (sent !== socket[kSent]) {
    socket[kSent] = sent;
    socket[kStillSince] = now;
    socket[kUnacked] = -1;
    return 0;
  }
  return now - socket[kStillSince];
}

// Linux: each socket's inode (its descriptor's link in /proc/self/fd), then its line in
// /proc/self/net/tcp or tcp6, whose tx_queue is the bytes sent and not acknowledged plus those not
// sent yet. Read only for connections that have waited half the timeout or all of it; elsewhere, or
// when a read fails, nothing is known and a connection is judged by its write queue alone.
function kernelSendQueues(sockets) {
  const queues = new Map();
  const byInode = new Map();
  for (const socket of sockets) {
    const handle = (acceptedSocket(socket) || socket)._handle;
    if (!handle || !(handle.fd >= 0)) continue;
    try {
      const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/self/fd/${handle.fd}`));
      if (match) byInode.set(match[1], socket);
    } catch {} // not Linux, or closed meanwhile
  }
  if (byInode.size === 0) return queues;
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    if (queues.size === byInode.size) break; // all found in the first
    let text;
    try {
      text = fs.readFileSync(table, 'latin1');
    } catch {
      continue;
    }
    // One pass over the table, whatever the number of sockets asked about: a search of the whole
    // text per socket made a sweep that judged many stalled connections at once (a slow-read flood)
    // cost their number times the table's size.
    for (const line of text.split('\n')) {
      const fields = line.trim().split(/\s+/);
      const socket = byInode.get(fields[9]);
      if (socket !== undefined) queues.set(socket, parseInt(fields[4], 16)); // "tx_queue:rx_queue", hex
    }
  }
  return queues;
}

// A reset of the accepted TCP socket: the kernel drops what the client never took, instead of
// keeping it for a client that may never take it. Over TLS, the TLS socket is destroyed, which the
// HTTP server (and the response) hear of, and which destroys the TCP socket under it and waits for
// its close; marked as resetAndDestroy() marks it, that close is a reset. (A reset of the TCP socket
// first would leave the TLS one waiting for a close that has already happened: it would never
// emit 'close', nor its response.)
function closeStalled(socket) {
  const accepted = acceptedSocket(socket);
  if (accepted === null || accepted === socket) return closeNow(socket);
  accepted.on('error', () => {}); // as closeNow: a failed reset is no one's to hear
  if (!accepted.destroyed) accepted.resetAndClosing = true; // net.js's flag for a reset on destroy
  return socket.destroy();
}

module.exports = { closeStalledSends, stalledSendSweeper, kernelSendQueues, MIN_TAKEN_BYTES };
