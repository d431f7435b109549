'use strict';
// Which host a request is for, and SVR.JS's host patterns. Node built-ins only.
//
// requestHost(req): the Host header (or HTTP/2's :authority), lowercased, without its port and
// without a trailing dot; '' when there is none. Every stage that matches hosts reads it here.
//
// compileHostPattern(pattern) -> null (matches every host) | test(req) -> boolean, with SVR.JS's
// meaning: "*" any host; "*.example.com" the domain and every name below it; anything else the exact
// name. A pattern that names a port ("example.com:8080") is compared with the port kept, as a
// number ("example.com.:08080" is the same); a Host without a port does not match it (the port in
// a Host is the client's word: a rule that must hold whatever the client sends names no port).
// (TLS certificates follow another rule, RFC 6125's one-label wildcard: see net/tls-context.js.)

function authority(req) {
  const headers = req.headers || {};
  return String(headers.host || headers[':authority'] || '').toLowerCase();
}

function withoutPort(host) {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end === -1 ? host : host.slice(0, end + 1);
  }
  const colon = host.indexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}

function withoutDot(host) {
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

function requestHost(req) {
  return withoutDot(withoutPort(authority(req)));
}

// "name:port" with the name's trailing dot dropped and the port as a number ("example.com.:08080"
// is "example.com:8080"), for patterns that name a port; the name alone when there is no port.
function hostAndPort(value) {
  const name = withoutPort(value);
  const port = value.slice(name.length + 1);
  return port === '' ? withoutDot(name) : `${withoutDot(name)}:${/^\d+$/.test(port) ? Number(port) : port}`;
}

function compileHostPattern(pattern) {
  if (pattern === undefined || pattern === null || pattern === '*') return null;
  const lowered = String(pattern).toLowerCase();
  const withPort = lowered.includes(':') && !lowered.startsWith('[');
  const wanted = withPort ? hostAndPort(lowered) : withoutDot(lowered);
  const hostOf = withPort ? (req) => hostAndPort(authority(req)) : requestHost;
  if (wanted.startsWith('*.')) {
    const domain = wanted.slice(2);
    const suffix = '.' + domain;
    return (req) => {
      const host = hostOf(req);
      return host === domain || host.endsWith(suffix);
    };
  }
  return (req) => hostOf(req) === wanted;
}

// One-off form, for scripts' checkHostname(): true when `pattern` matches this request.
function hostMatches(req, pattern) {
  const test = compileHostPattern(pattern);
  return test === null || test(req);
}

module.exports = { requestHost, compileHostPattern, hostMatches };
