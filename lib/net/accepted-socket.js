'use strict';
// Which accepted connection carries a request? Over TLS, req.socket is the TLS socket that wraps
// the accepted one (for HTTP/2, a proxy of it that forwards property reads), while the worker's
// connection state, the silent-connection timer and the PROXY protocol's client belong to the
// accepted socket. Node names the wrapped socket only in a private field: it is read here, once
// per connection when the handshake is done, and kept under a symbol of ours, which the HTTP/2
// proxy forwards like any property.
//
//   rememberAccepted(server)    on a TLS server: record each TLS socket's accepted socket
//   acceptedBeneath(tlsSocket)  the accepted socket under a TLS socket (recorded on first ask)
//   acceptedSocket(socket)      the accepted socket of a request's socket (itself without TLS)

const kAccepted = Symbol('svr.acceptedSocket');

function acceptedBeneath(tlsSocket) {
  if (tlsSocket[kAccepted] === undefined) tlsSocket[kAccepted] = tlsSocket._parent || null;
  return tlsSocket[kAccepted];
}

function rememberAccepted(server) {
  server.prependListener('secureConnection', acceptedBeneath);
}

function acceptedSocket(socket) {
  if (!socket) return null;
  const beneath = socket[kAccepted];
  return beneath === undefined ? socket : beneath;
}

module.exports = { rememberAccepted, acceptedBeneath, acceptedSocket };
