'use strict';
// The one host matcher every host-scoped rule uses (rewrite rules, proxy rules).
//
//   compileHostPattern(pattern) -> null (matches every host) | (req) -> boolean
//
// A pattern is an exact name ("app.example"), "*" (any), or "*.example" (which also matches
// "example" itself). Names are compared lowercased, without a trailing dot, and without the port
// unless the pattern names one ("app.example:8080"). HTTP/2 requests carry :authority instead of
// Host; both are read.

function compileHostPattern(pattern) {
  if (pattern === undefined || pattern === null || pattern === '*') return null;
  const wanted = String(pattern).toLowerCase();
  const withPort = wanted.includes(':') && !wanted.startsWith('[');
  const test = wanted.startsWith('*.')
    ? suffixTest(wanted.slice(2))
    : (value) => value === wanted;
  return (req) => test(requestHost(req, withPort));
}

function suffixTest(domain) {
  const dotted = `.${domain}`;
  return (value) => value === domain || value.endsWith(dotted);
}

// The Host (or :authority) of a request, lowercased, trailing dot removed; the port removed
// unless withPort.
function requestHost(req, withPort = false) {
  const headers = req.headers || {};
  let host = String(headers.host || headers[':authority'] || '').toLowerCase();
  if (!withPort) host = stripPort(host);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

function stripPort(host) {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end === -1 ? host : host.slice(0, end + 1);
  }
  const colon = host.indexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}

module.exports = { compileHostPattern, requestHost };
