'use strict';
// What the proxy cache may store and serve, decided from the request and the response headers
// alone (RFC 9111, as a shared cache). Nothing here touches the disk.
//
//   bypassReason(req) -> null | why the request neither reads nor fills the cache
//   storable(status, headers, { setCookie }) -> { lifetimeMs, revalidateAlways } | { reason } (why not)
//     setCookie: proxyCache.setCookie; "strip" stores a response that sets cookies, without them
//   parseCacheControl(value) -> Map(directive -> value | true)
//   ageOf(entry, now) -> seconds since the upstream made the response
//
// Never cached, whatever the upstream says:
// - requests other than GET and HEAD; requests with Authorization or Cookie (the answer may be
//   that user's); requests with a header some applications read as another URL, host, port,
//   scheme or method (X-Original-URL and friends: the key does not hold them, so storing such an
//   answer would let one client poison the page for everyone), or with a header name holding
//   anything but letters, digits and "-"; requests with a body;
// - responses with Set-Cookie (unless proxyCache.setCookie is "strip": then stored without it),
//   `Cache-Control: private` or `no-store`, `Vary: *`, a status a
//   cache may not keep by default, or without an explicit lifetime (s-maxage, max-age, Expires)
//   unless they say `no-cache` and carry a validator (then each use is revalidated).

const { requestHasBody } = require('../upstream/retry');

const UNKEYED_OVERRIDES = [
  'x-original-url', 'x-original-uri', 'x-forwarded-uri', 'x-rewrite-url', 'x-rewrite-path', 'x-forwarded-prefix',
  'x-forwarded-path', 'x-host', 'x-original-host', 'x-http-host-override', 'x-forwarded-server', 'x-forwarded-port',
  'x-forwarded-scheme', 'x-forwarded-protocol', 'x-forwarded-ssl', 'front-end-https', 'x-url-scheme', 'x-scheme',
  'x-http-method-override', 'x-http-method', 'x-method-override', 'x-original-method',
];
// Names of letters, digits and '-' only: any other character ('_', '.') reads as '_' to CGI,
// WSGI, Rack and PHP, so X.Original.URL is HTTP_X_ORIGINAL_URL there.
const PLAIN_HEADER_NAME = /^[a-z0-9-]+$/;
// RFC 9110 15.1: heuristically cacheable statuses; svr still needs an explicit lifetime.
const STORABLE_STATUS = new Set([200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]);

function bypassReason(req) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return 'method';
  const headers = req.headers;
  if (headers.authorization !== undefined) return 'authorization';
  if (headers.cookie !== undefined) return 'cookie';
  for (const name of UNKEYED_OVERRIDES) if (headers[name] !== undefined) return name;
  // No list of names can hold every spelling an upstream reads as one of them (above).
  for (const name in headers) {
    if (!PLAIN_HEADER_NAME.test(name) && name.charCodeAt(0) !== 0x3a /* ':' HTTP/2's pseudo-headers */) return 'header name';
  }
  // The key does not hold a body: a GET whose answer depends on one must not be stored by its URL.
  if (requestHasBody(req)) return 'body';
  return null;
}

function parseCacheControl(value) {
  const directives = new Map();
  if (!value) return directives;
  for (const part of String(value).split(',')) {
    const [rawName, ...rest] = part.split('=');
    const name = rawName.trim().toLowerCase();
    if (!name) continue;
    const raw = rest.join('=').trim().replace(/^"|"$/g, '');
    directives.set(name, rest.length ? raw : true);
  }
  return directives;
}

function seconds(value) {
  const n = Number(value);
  return Number.isInteger(n) && n >= 0 ? n : null;
}

function storable(status, headers, { setCookie = 'bypass' } = {}) {
  if (!STORABLE_STATUS.has(status)) return { reason: `status ${status}` };
  if (headers['set-cookie'] !== undefined && setCookie !== 'strip') return { reason: 'set-cookie' };
  if (String(headers.vary || '').split(',').some((name) => name.trim() === '*')) return { reason: 'vary *' };
  const cc = parseCacheControl(headers['cache-control']);
  if (cc.has('no-store')) return { reason: 'no-store' };
  if (cc.has('private')) return { reason: 'private' };
  const validator = headers.etag !== undefined || headers['last-modified'] !== undefined;
  if (cc.has('no-cache')) return validator ? { lifetimeMs: 0, revalidateAlways: true } : { reason: 'no-cache without a validator' };
  let lifetime = seconds(cc.get('s-maxage'));
  if (lifetime === null) lifetime = seconds(cc.get('max-age'));
  if (lifetime === null && headers.expires !== undefined) {
    const expires = Date.parse(headers.expires);
    const date = headers.date !== undefined ? Date.parse(headers.date) : Date.now();
    lifetime = Number.isNaN(expires) || Number.isNaN(date) ? 0 : Math.max(0, Math.floor((expires - date) / 1000));
  }
  if (lifetime === null) return { reason: 'no explicit lifetime' };
  if (lifetime === 0 && !validator) return { reason: 'expired' };
  const mustRevalidate = cc.has('must-revalidate') || cc.has('proxy-revalidate');
  return {
    lifetimeMs: lifetime * 1000,
    revalidateAlways: false,
    staleWhileRevalidateMs: mustRevalidate ? 0 : (seconds(cc.get('stale-while-revalidate')) || 0) * 1000,
    staleIfErrorMs: mustRevalidate ? 0 : (seconds(cc.get('stale-if-error')) || 0) * 1000,
  };
}

function ageOf(entry, now) {
  return Math.max(0, Math.floor((now - entry.storedAt) / 1000) + (seconds(entry.upstreamAge) || 0));
}

module.exports = { bypassReason, storable, parseCacheControl, ageOf, UNKEYED_OVERRIDES };
