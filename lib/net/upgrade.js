'use strict';
// Requests with an Upgrade header (WebSocket, h2c, ...). Node hands them to the server's
// 'upgrade' event with the raw socket, detached from the HTTP parser. svr gives them to the normal
// request handler (the pipeline: mods, serverSideScript.js, static files) with a response object
// on that socket, so that
//   - a mod or script that takes the protocol writes its own "101 Switching Protocols" to
//     req.socket (or res.socket) and owns the connection from then on (req.upgradeHead holds any
//     bytes the client sent after the headers, as Node's 'upgrade' event gives them);
//   - when nobody takes it, it is answered as a normal request, and the connection is closed
//     after that answer (the socket has left the HTTP parser, so it cannot serve another request).

const http = require('node:http');

function handleUpgrade(req, socket, head, handler) {
  req.upgradeHead = head;
  const res = new http.ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  res.once('finish', () => {
    res.detachSocket(socket);
    // A response made here gets no 'close' from an HTTP server: the access log, the metrics and
    // the worker's socket bookkeeping wait for one, so it comes when the socket closes.
    socket.once('close', () => res.emit('close'));
    socket.end();
  });
  socket.on('error', () => {}); // a client gone mid-answer is not the worker's problem
  handler(req, res);
}

module.exports = { handleUpgrade };
