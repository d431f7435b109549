'use strict';
// The headers that cross the proxy, both ways.
//
// To the upstream: the client's headers minus the hop-by-hop ones (RFC 9110 7.6.1: Connection,
// the names it lists, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-*), minus HTTP/2
// pseudo-headers; plus X-Forwarded-For/-Proto/-Host and Forwarded. The client's own values of
// those four are kept (and appended to) only when the peer is in `trustedProxies`; from anyone
// else they are replaced, so a client cannot forge its address; X-Real-IP likewise passes only
// from a trusted peer, and "_" spellings of these names never. Then the rule's set/remove edits.
// From the upstream: its headers minus the hop-by-hop ones, then the rule's response edits.

const { plainAddress } = require('../../http/trusted-proxies');

const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization',
  'te', 'trailer', 'transfer-encoding', 'upgrade', 'http2-settings',
]);
const FORWARDING = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded']);
// Also about the client's address, which svr does not set: passed on only from a trusted proxy.
const ADDRESS_CLAIMS = new Set([...FORWARDING, 'x-real-ip']);

// A name that becomes a forwarding header when "_" is read as "-" (CGI and WSGI environments,
// some frameworks): never forwarded, from anyone.
function spellsForwarding(name) {
  return name.includes('_') && ADDRESS_CLAIMS.has(name.replace(/_/g, '-'));
}

function dropped(name, listed, trusted) {
  return name.charCodeAt(0) === 58 /* ':' */ || isHopByHop(name, listed) || FORWARDING.has(name)
    || (name === 'x-real-ip' && !trusted) || spellsForwarding(name);
}

// Names listed in the Connection header are hop-by-hop too.
function connectionTokens(value) {
  if (!value) return null;
  return new Set(String(value).toLowerCase().split(',').map((token) => token.trim()).filter(Boolean));
}

function isHopByHop(name, listed) {
  return HOP_BY_HOP.has(name) || (listed !== null && listed.has(name));
}

// ctx: { isTrusted(address), upgrade?: string } -> a plain headers object for http.request.
function upstreamRequestHeaders(req, rule, target, ctx) {
  const incoming = req.headers;
  const listed = connectionTokens(incoming.connection);
  const peer = plainAddress(req.socket && req.socket.remoteAddress);
  const trusted = peer !== '' && ctx.isTrusted(peer);
  const headers = {};
  for (const name of Object.keys(incoming)) {
    if (!dropped(name, listed, trusted)) headers[name] = incoming[name];
  }
  const proto = isEncrypted(req) ? 'https' : 'http';
  const host = String(incoming.host || incoming[':authority'] || '');
  const keep = (name) => (trusted && incoming[name] ? String(incoming[name]) : null);

  headers['x-forwarded-for'] = appendTo(keep('x-forwarded-for'), peer);
  headers['x-forwarded-proto'] = keep('x-forwarded-proto') || proto;
  if (host) headers['x-forwarded-host'] = keep('x-forwarded-host') || host;
  headers.forwarded = appendTo(keep('forwarded'), forwardedElement(peer, host, proto));
  if (rule.via) headers.via = appendTo(headers.via ? String(headers.via) : null, `${req.httpVersion} svr`);
  headers.host = rule.preserveHost && host ? host : target.host || 'localhost';
  if (ctx.upgrade) {
    headers.connection = 'Upgrade';
    headers.upgrade = ctx.upgrade;
    // The handshake goes without a body (what follows it is the tunnel's): a Content-Length left
    // in would have the upstream wait for bytes that never come, holding its connection.
    delete headers['content-length'];
  }
  applyEdits(headers, rule.requestHeaders);
  return headers;
}

function appendTo(chain, value) {
  if (!value) return chain || undefined;
  return chain ? `${chain}, ${value}` : value;
}

// RFC 7239: an IPv6 node is bracketed and quoted; a host with a port or odd characters is quoted.
function forwardedElement(peer, host, proto) {
  const node = peer.includes(':') ? `"[${peer}]"` : peer || 'unknown';
  const parts = [`for=${node}`];
  if (host) parts.push(`host=${/^[\w.-]+$/.test(host) ? host : JSON.stringify(host)}`);
  parts.push(`proto=${proto}`);
  return parts.join(';');
}

function isEncrypted(req) {
  return Boolean(req.socket && req.socket.encrypted) || req.httpVersionMajor === 2;
}

// The upstream response's headers as an object for res.writeHead, hop-by-hop removed.
function clientResponseHeaders(upstreamRes, rule) {
  const listed = connectionTokens(upstreamRes.headers.connection);
  const headers = {};
  for (const name of Object.keys(upstreamRes.headers)) {
    if (isHopByHop(name, listed)) continue;
    headers[name] = upstreamRes.headers[name];
  }
  applyEdits(headers, rule.responseHeaders);
  return headers;
}

function applyEdits(headers, edits) {
  if (!edits) return;
  for (const name of edits.remove) delete headers[name];
  for (const [name, value] of edits.set) headers[name] = value;
}

module.exports = { upstreamRequestHeaders, clientResponseHeaders, isHopByHop, connectionTokens };
