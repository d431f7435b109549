'use strict';
// Which upgrade requests the proxy tunnels. Once two sockets are joined, svr sees none of what
// crosses them: no access rule, forwarding header, access-log line or metric applies to what the
// client sends inside (with h2c, whole HTTP requests: the "h2c smuggling" pattern). So a rule
// tunnels only the protocols it lists in `upgradeProtocols` (default: websocket), and a WebSocket
// only for a well-formed handshake (RFC 6455 4.1, 4.2.1).
//
//   upgradeDecision(req, rule) ->
//     { protocol }          tunnel it, asking the upstream for `protocol` (lower case)
//     { forward: true }     an HTTP/1.1 request asking for an unlisted protocol: forwarded as an
//                           ordinary request, without Upgrade (a server may ignore Upgrade)
//     { status, headers? }  refuse it with this answer

const { requestHasBody } = require('../upstream');

const WEBSOCKET_VERSION = '13';
const BASE64_OF_16_BYTES = /^[A-Za-z0-9+/]{21}[AQgw]==$/;

function upgradeDecision(req, rule) {
  if (req.httpVersionMajor === 2) return http2Decision(req, rule);
  const protocol = String(req.headers.upgrade || '').trim().toLowerCase();
  if (!rule.upgradeProtocols.has(protocol)) {
    // Its body, if any, is on a socket the HTTP parser has let go of: it cannot be forwarded.
    return requestHasBody(req) ? { status: 400 } : { forward: true };
  }
  if (protocol !== 'websocket') return { protocol };
  if (req.method !== 'GET' || !BASE64_OF_16_BYTES.test(String(req.headers['sec-websocket-key'] || ''))) return { status: 400 };
  return checkWebSocketVersion(req) || { protocol };
}

// RFC 8441: the protocol is the :protocol pseudo-header; there is no key to check.
function http2Decision(req, rule) {
  const protocol = String(req.headers[':protocol']).toLowerCase();
  if (!rule.upgradeProtocols.has(protocol)) return { status: 501 };
  if (protocol === 'websocket' && req.headers['sec-websocket-version'] !== undefined) return checkWebSocketVersion(req) || { protocol };
  return { protocol };
}

// Another version: 426 naming the one svr forwards (RFC 6455 4.4).
function checkWebSocketVersion(req) {
  if (String(req.headers['sec-websocket-version']).trim() === WEBSOCKET_VERSION) return null;
  return { status: 426, headers: { 'Sec-WebSocket-Version': WEBSOCKET_VERSION } };
}

module.exports = { upgradeDecision };
