'use strict';
// An HTTP/1.1 request with an Upgrade header (a WebSocket handshake) arrives on the server's
// 'upgrade' event as (req, socket, head), outside the request/response machinery. To run it
// through the same pipeline as every other request (sanitizing, rewriting, access control, the
// access log), it is given a real ServerResponse on its socket: a stage that does not tunnel it
// answers it like any request, and the connection closes after that answer (the HTTP parser has
// let go of the socket, so it cannot carry another request). The proxy stage tunnels it instead,
// from req.svr.upgrade = { socket, head } (the pipeline carries it into the record it makes).

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

module.exports = { responseForUpgrade };
