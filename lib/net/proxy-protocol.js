'use strict';
// The PROXY protocol (HAProxy's, versions 1 and 2) on a listener: a load balancer that forwards
// TCP connections sends, before anything else, a header naming the client it connected for. A
// listener that expects it:
//   - accepts connections only from `trustedProxies` (anyone else could claim any address);
//   - closes a connection whose first bytes are not a valid header, or that sends none within
//     the timeout (headersTimeout);
//   - then hands the socket to the HTTP/HTTPS/HTTP2 server as if it had just been accepted, with
//     socket.remoteAddress / remotePort / remoteFamily set to the client's (over TLS, on the TLS
//     socket too), so the access log, scripts and the proxy's X-Forwarded-For see the client.
// A v2 LOCAL header (a balancer's own health check) keeps the balancer's address.
//
//   requireProxyProtocol(server, { isTrusted(address), timeoutMs, log })
//   parseProxyHeader(buffer) -> { done: false } | { done: true, length, client: {address, port, family} | null }
//                               | { error }   (exported for the tests)

const net = require('node:net');
const { plainAddress } = require('../http/trusted-proxies');
const { acceptedBeneath } = require('./accepted-socket');
const { summarisedWarnings } = require('./summarised-log');

const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from('PROXY ');
const V1_MAX_LENGTH = 107; // the spec's longest line, CRLF included
const V2_MAX_LENGTH = 16 + 4096; // the fixed part + addresses and TLVs; HAProxy sends far less

function requireProxyProtocol(server, { isTrusted, timeoutMs, log }) {
  // https and the HTTP/2 secure server too. (node:tls is loaded here, not at the top: a worker
  // without HTTPS does not load it.)
  const secure = server instanceof require('node:tls').Server;
  const handOff = server.listeners('connection');
  server.removeAllListeners('connection');
  const refused = summarisedWarnings(log, { label: 'PROXY protocol' }); // summarised-log.js
  server.on('connection', (socket) => {
    const peer = plainAddress(socket.remoteAddress);
    if (!isTrusted(peer)) {
      refused(peer, `connection from ${peer}, which is not in trustedProxies: closed`);
      socket.destroy();
      return;
    }
    readHeader(socket, timeoutMs, (error, client) => {
      if (error) {
        refused(peer, `connection from ${peer} closed: ${error}`);
        socket.destroy();
        return;
      }
      if (client) setPeer(socket, client);
      for (const listener of handOff) listener.call(server, socket);
      // A plain HTTP server reads the socket as a stream: let it flow again. A TLS server's socket
      // reads the handle itself and takes the bytes that came after the header (the ClientHello,
      // when the balancer sent both at once) from the socket's buffer when it starts, on a later
      // tick: resuming here would flush them to no one first, and the handshake would never end.
      if (!secure) socket.resume();
    });
  });
  // A TLS socket asks its own handle for the peer: give it the client too.
  server.prependListener('secureConnection', (tlsSocket) => {
    const accepted = acceptedBeneath(tlsSocket);
    const client = accepted && accepted.svrProxyClient;
    if (client) setPeer(tlsSocket, client);
  });
}

function readHeader(socket, timeoutMs, done) {
  let buffered = Buffer.alloc(0);
  let finished = false;
  const finish = (error, client) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('close', onClose);
    done(error, client);
  };
  // headersTimeout 0 sets no limit here, as it sets none on the request head.
  const timer = timeoutMs > 0 ? setTimeout(() => finish(`no PROXY header within ${timeoutMs} ms`), timeoutMs) : undefined;
  const onClose = () => finish('closed before the PROXY header');
  const onData = (chunk) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    const result = parseProxyHeader(buffered);
    if (result.error) return finish(result.error);
    if (!result.done) return undefined;
    socket.pause();
    if (buffered.length > result.length) socket.unshift(buffered.subarray(result.length));
    return finish(null, result.client);
  };
  socket.on('data', onData);
  socket.on('close', onClose);
  socket.on('error', () => {}); // a reset during the header: 'close' follows
}

function setPeer(socket, client) {
  socket.svrProxyClient = client;
  for (const [name, value] of [['remoteAddress', client.address], ['remotePort', client.port], ['remoteFamily', client.family]]) {
    Object.defineProperty(socket, name, { value, configurable: true, enumerable: true });
  }
}

function parseProxyHeader(buffer) {
  if (startsWithPart(buffer, V2_SIGNATURE)) return buffer.length < 16 ? { done: false } : parseV2(buffer);
  if (startsWithPart(buffer, V1_PREFIX)) return parseV1(buffer);
  return { error: 'no PROXY header (v1 or v2) at the start of the connection' };
}

// True when buffer starts with prefix, or is a (shorter) beginning of it.
function startsWithPart(buffer, prefix) {
  const n = Math.min(buffer.length, prefix.length);
  return buffer.subarray(0, n).equals(prefix.subarray(0, n));
}

// "PROXY TCP4 192.0.2.1 198.51.100.1 56324 443\r\n", "PROXY TCP6 ...", "PROXY UNKNOWN ...\r\n"
function parseV1(buffer) {
  const end = buffer.indexOf('\r\n');
  if (end === -1) return buffer.length >= V1_MAX_LENGTH ? { error: 'PROXY v1 header longer than 107 bytes' } : { done: false };
  const line = buffer.toString('latin1', 0, end);
  const parts = line.split(' ');
  const length = end + 2;
  if (parts[1] === 'UNKNOWN') return { done: true, length, client: null };
  const family = { TCP4: 'IPv4', TCP6: 'IPv6' }[parts[1]];
  const port = Number(parts[4]);
  if (!family || parts.length !== 6 || !isAddress(parts[2], family) || !isPort(parts[4]) || !isPort(parts[5])) {
    return { error: `malformed PROXY v1 header ${JSON.stringify(line.slice(0, 60))}` };
  }
  return { done: true, length, client: { address: parts[2], port, family } };
}

function parseV2(buffer) {
  const versionCommand = buffer[12];
  if (versionCommand >> 4 !== 2) return { error: `PROXY v2 header with version ${versionCommand >> 4}` };
  const command = versionCommand & 0x0f;
  const familyProtocol = buffer[13];
  const payloadLength = buffer.readUInt16BE(14);
  const length = 16 + payloadLength;
  if (length > V2_MAX_LENGTH) return { error: `PROXY v2 header of ${length} bytes (at most ${V2_MAX_LENGTH})` };
  if (buffer.length < length) return { done: false };
  if (command === 0) return { done: true, length, client: null }; // LOCAL: the balancer itself
  if (command !== 1) return { error: `PROXY v2 header with unknown command ${command}` };
  const family = familyProtocol >> 4;
  const payload = buffer.subarray(16, length);
  if (family === 1 && payload.length >= 12) {
    return { done: true, length, client: { address: [...payload.subarray(0, 4)].join('.'), port: payload.readUInt16BE(8), family: 'IPv4' } };
  }
  if (family === 2 && payload.length >= 36) {
    return { done: true, length, client: { address: ipv6Text(payload.subarray(0, 16)), port: payload.readUInt16BE(32), family: 'IPv6' } };
  }
  if (family === 0 || family === 3) return { done: true, length, client: null }; // UNSPEC, unix: nothing to show
  return { error: `PROXY v2 header with address family ${family} and ${payload.length} address bytes` };
}

function ipv6Text(bytes) {
  const groups = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  const text = groups.join(':');
  // The short form, as a direct connection shows it (an IPv4-mapped one as ::ffff:1.2.3.4).
  if (/^0:0:0:0:0:ffff:/.test(text)) return `::ffff:${[...bytes.subarray(12)].join('.')}`;
  return new URL(`http://[${text}]/`).hostname.slice(1, -1);
}

function isAddress(text, family) {
  return net.isIP(text) === (family === 'IPv4' ? 4 : 6);
}

function isPort(text) {
  return /^\d{1,5}$/.test(text) && Number(text) <= 65535;
}

module.exports = { requireProxyProtocol, parseProxyHeader };
