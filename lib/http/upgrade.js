'use strict';
// An HTTP/1.1 request with an Upgrade header (a WebSocket handshake) arrives on the server's
// 'upgrade' event as (req, socket, head), outside the request/response machinery. To run it
// through the same pipeline as every other request (sanitizing, rewriting, access control, the
// access log), it is given a real ServerResponse on its socket: a stage that does not tunnel it
// answers it like any request, and the connection closes after that answer (the HTTP parser has
// let go of the socket, so it cannot carry another request). The proxy stage tunnels it instead,
// from req.svr.upgrade = { socket, head } (the pipeline carries it into the record it makes).
// routeConnect does the same for HTTP/2's extended CONNECT.

const http = require('node:http');

function responseForUpgrade(req, socket, head) {
  req.svr = { upgrade: { socket, head } };
  const res = new http.ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket); // the socket's 'close' becomes the response's 'close'
  res.once('finish', () => socket.destroySoon()); // flush the answer, then close
  socket.on('error', () => socket.destroy());
  return res;
}

// HTTP/2's way to open a WebSocket (RFC 8441): a CONNECT request with a :protocol pseudo-header,
// on a stream of its own, with an ordinary (compat) request and response. It takes the same
// pipeline, marked req.svr.upgrade = { h2: true }. Any other CONNECT is not served: an HTTP/1.1
// one (a forward-proxy request, given a raw socket) is closed, an HTTP/2 one gets 405.
function routeConnect(req, resOrSocket, onRequest) {
  if (req.httpVersionMajor === 2 && req.headers[':protocol']) {
    req.svr = { upgrade: { h2: true } };
    return onRequest(req, resOrSocket);
  }
  if (req.httpVersionMajor === 2) {
    resOrSocket.writeHead(405);
    return resOrSocket.end();
  }
  return resOrSocket.destroy();
}

module.exports = { responseForUpgrade, routeConnect };
