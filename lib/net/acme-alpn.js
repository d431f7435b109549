'use strict';
// TLS-ALPN-01 (RFC 8737) on the HTTPS listener: while a challenge is pending, the first TLS record
// of each connection is read before the server sees it. A ClientHello that offers only the
// `acme-tls/1` protocol is the CA's validation: it gets the validation certificate for its server
// name and the connection is closed after the handshake. Every other connection is handed to the
// server with its bytes put back, untouched. With no challenge pending the server gets the
// connection at once.
//
//   answerAlpnChallenges(server, answers)   answers: acme/challenges.js's ChallengeAnswers
//   parseClientHello(buffer) -> undefined (need more) | null (not a ClientHello) | { servername, alpn }

const MAX_HELLO_BYTES = 16384 + 5; // one TLS record
const HELLO_TIMEOUT_MS = 10000;

function answerAlpnChallenges(server, answers) {
  const handOff = server.listeners('connection');
  server.removeAllListeners('connection');
  const pass = (socket) => { for (const listener of handOff) listener.call(server, socket); };
  server.on('connection', (socket) => {
    if (!answers.alpnWanted()) return pass(socket);
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), HELLO_TIMEOUT_MS);
    const onData = (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      const hello = parseClientHello(buffered);
      if (hello === undefined && buffered.length < MAX_HELLO_BYTES) return;
      clearTimeout(timer);
      socket.off('data', onData);
      socket.pause();
      socket.unshift(buffered);
      // RFC 8737: the CA offers acme-tls/1 alone. One for a name with no pending challenge is closed.
      const validation = hello && hello.alpn.length === 1 && hello.alpn[0] === 'acme-tls/1';
      if (!validation) return pass(socket);
      const context = answers.alpnContext(hello.servername);
      if (context) answer(socket, context);
      else socket.destroy();
      return undefined;
    };
    socket.on('data', onData);
    socket.resume(); // after a PROXY header the socket was paused with the ClientHello put back
    socket.on('error', () => clearTimeout(timer));
    socket.on('close', () => clearTimeout(timer));
    return undefined;
  });
}

function answer(socket, secureContext) {
  const tls = require('node:tls');
  const tlsSocket = new tls.TLSSocket(socket, { isServer: true, secureContext, ALPNProtocols: ['acme-tls/1'] });
  tlsSocket.on('secure', () => tlsSocket.end());
  tlsSocket.on('error', () => tlsSocket.destroy());
  tlsSocket.setTimeout(HELLO_TIMEOUT_MS, () => tlsSocket.destroy());
}

function parseClientHello(buf) {
  if (buf.length < 5) return undefined;
  if (buf[0] !== 0x16) return null; // not a handshake record
  const recordEnd = 5 + buf.readUInt16BE(3);
  if (buf.length < recordEnd) return undefined;
  if (buf[5] !== 0x01) return null; // not a ClientHello
  try {
    let at = 5 + 4 + 2 + 32; // handshake header, client version, random
    at += 1 + buf[at]; // session id
    at += 2 + buf.readUInt16BE(at); // cipher suites
    at += 1 + buf[at]; // compression methods
    const hello = { servername: null, alpn: [] };
    if (at + 2 > recordEnd) return hello;
    const extensionsEnd = Math.min(at + 2 + buf.readUInt16BE(at), recordEnd);
    at += 2;
    while (at + 4 <= extensionsEnd) {
      const type = buf.readUInt16BE(at);
      const length = buf.readUInt16BE(at + 2);
      const body = buf.subarray(at + 4, at + 4 + length);
      if (type === 0 && body.length > 5 && body[2] === 0) hello.servername = body.toString('latin1', 5, 5 + body.readUInt16BE(3));
      if (type === 16) {
        for (let p = 2; p < body.length; p += 1 + body[p]) hello.alpn.push(body.toString('latin1', p + 1, p + 1 + body[p]));
      }
      at += 4 + length;
    }
    return hello;
  } catch {
    return null;
  }
}

module.exports = { answerAlpnChallenges, parseClientHello };
