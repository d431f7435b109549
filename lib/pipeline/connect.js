'use strict';
// Stage: CONNECT. Every CONNECT reaches the stage list (an HTTP/1 one with a response made for
// its socket, as an Upgrade: net/upgrade.js), so the blocklist applies before anything is tunnelled.
//   HTTP/1    the mods' proxy handlers (SVR.JS's forward proxy) take the socket; without one, 501.
//   HTTP/2    an extended CONNECT (a WebSocket, RFC 8441) goes on to the reverse proxy when there
//             are `proxy` rules (outside them it is refused like any unknown method); else 501.
// modsConnect(req, socket, head): the scripting stage's CONNECT handler, or null.

function createConnectStage({ modsConnect, reverseProxy }) {
  return function connect(req, res, next) {
    if (req.method !== 'CONNECT') return next();
    if (req.httpVersionMajor >= 2) {
      if (req.headers[':protocol'] && reverseProxy) return next();
      return notImplemented(res);
    }
    if (modsConnect) return modsConnect(req, req.socket, req.upgradeHead);
    return notImplemented(res);
  };
}

// SVR.JS's answer without a proxy mod: a bare 501 (the connection closes after it).
function notImplemented(res) {
  res.writeHead(501, { 'content-length': 0 });
  res.end();
}

module.exports = { createConnectStage };
