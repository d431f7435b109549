'use strict';
// A connection must send its first request within headersTimeout of being accepted, or it is
// closed. Node's own headersTimeout starts only with the first byte
// of a request, so without this a client could hold a descriptor for ever by sending nothing:
// plain TCP, TCP to the TLS port with no ClientHello, TLS done but no request, h2 ALPN but no
// preface. After the first request, keepAliveTimeout / the HTTP/2 idle GOAWAY take over.

const { acceptedSocket } = require('./accepted-socket');

const kSilentTimer = Symbol('svr.silentTimer');

// server: an http, https or http2 secure server (its 'connection' gives the accepted socket).
// The server's request handler calls heardFrom(req) for every request (listeners.js): a second
// 'request' listener would cost every request an emit over a listener array.
function closeSilentConnections(server, timeoutMs) {
  if (!(timeoutMs > 0)) return;
  server.on('connection', (socket) => {
    const timer = setTimeout(closeNow, timeoutMs, socket);
    timer.unref();
    socket[kSilentTimer] = timer;
    socket.on('close', clearSilentTimer);
  });
}

// A socket's 'close' listener (this: the socket): the timer would hold it until it fired.
function clearSilentTimer() {
  clearTimeout(this[kSilentTimer]); // null once heardFrom cleared it: a no-op
}

// A request arrived: its connection is no longer silent.
function heardFrom(req) {
  const accepted = acceptedSocket(req.socket);
  if (accepted && accepted[kSilentTimer]) {
    clearTimeout(accepted[kSilentTimer]);
    accepted[kSilentTimer] = null;
  }
}

// A reset, on the accepted TCP socket: once TLS and an HTTP/2 session sit on top of it, neither
// destroying the TLS socket nor the session's destroy() closes the descriptor (Node 20), a reset does.
function closeNow(socket) {
  if (socket.destroyed) return;
  socket.on('error', () => {});
  socket.resetAndDestroy();
}

module.exports = { closeSilentConnections, heardFrom, closeNow };
