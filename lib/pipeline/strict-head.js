'use strict';
// Strict HTTP/1 where Node's parser is lenient; nginx and
// RFC 9112 refuse these, and so does svr, before any other stage looks at the request:
//
//   HTTP version other than 1.0 / 1.1 on the HTTP/1 port (e.g. "GET / HTTP/2.0")   505
//   more than one Host header                                                      400
//   no Host header on HTTP/1.1 (Node refuses it too; kept here so it is explicit)  400
//   a Host that is not a host name or address with an optional port (RFC 3986's
//   uri-host: "evil/../x", "x@evil", "a b", "[::1" are not), or holds ".."; it
//   reaches scripts, PHP's SERVER_NAME and upstreams, which build links from it   400
//   an absolute-form target ("GET http://host/x") whose authority is empty or not
//   such a host; a valid one is the request's host (takeTargetHost below)         400
//   Transfer-Encoding on HTTP/1.0 (RFC 9112 §6.1: faulty framing)                 400
//   Transfer-Encoding other than exactly "chunked" (RFC 9112 §6.1: the body's end
//   cannot be known, so the rest of the connection must not be read as a request)  501
//   a request head larger than maxHeaderSize counted as on the wire: request line
//   and every header line with its ": " and CRLF (Node counts only names and
//   values, so 5,000 "A: b" lines, 30 KB, passed a 16 KB limit)                     431
//
// Every refusal closes the connection (Connection: close), as nginx does: after a malformed head
// the framing of what follows cannot be trusted. HTTP/2 requests (req.stream) have their own
// framing: only their Host (:authority) is checked. The listeners set maxHeadersCount to 0 so
// that every header line reaches rawHeaders and is counted (the byte limit above still bounds them).

const { absoluteAuthority } = require('../http/target');

const REQUEST_LINE_OVERHEAD = ' '.length * 2 + 'HTTP/1.1'.length + 2; // spaces, version, CRLF
const HEADER_LINE_OVERHEAD = ': '.length + 2; // separator and CRLF
const END_OF_HEAD = 2;
// uri-host [ ":" port ]: an IP literal in brackets, or a reg-name (unreserved, pct-encoded and
// sub-delims characters), and digits after one ':'.
const HOST_SYNTAX = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]*)(?::[0-9]*)?$/;

function isValidHost(host) {
  return HOST_SYNTAX.test(host) && !host.includes('..');
}

// RFC 9112 §3.2.2: the authority of an absolute-form target is the request's host, whatever Host
// says. Every later stage (virtual hosts, host-scoped rules, scripts, PHP's SERVER_NAME and
// HTTP_HOST, the Host an upstream gets, the cache key) reads the host from req.headers.host, so
// the authority is put there, as HTTP/2's :authority is (net/tls-context.js); rawHeaders keep
// the Host as sent. A mod that takes proxy requests gets them before this stage
// (forward-proxy.js), untouched. Returns false when the authority is no host.
function takeTargetHost(req) {
  if (req.method === 'CONNECT') return true; // its authority-form target is the connect stage's
  const authority = absoluteAuthority(req.url);
  if (authority === null) return true;
  if (authority === '' || !isValidHost(authority)) return false;
  req.headers.host = authority;
  return true;
}

function createStrictHeadStage(site) {
  const maxHeaderSize = site.config.maxHeaderSize;

  function refuse(req, res, status) {
    return site.sendError(req, res, status, { headers: { Connection: 'close' } });
  }

  // The first problem of an HTTP/1 request head, as a status, or 0.
  function headProblem(req) {
    if (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1) return 505;
    const raw = req.rawHeaders;
    let size = req.method.length + req.url.length + REQUEST_LINE_OVERHEAD + END_OF_HEAD;
    let hosts = 0;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i];
      size += name.length + raw[i + 1].length + HEADER_LINE_OVERHEAD;
      if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
    }
    if (size > maxHeaderSize) return 431;
    if (hosts > 1 || (hosts === 0 && req.httpVersionMinor === 1)) return 400;
    if (hosts === 1 && !isValidHost(req.headers.host)) return 400;
    const te = req.headers['transfer-encoding'];
    if (te !== undefined && req.httpVersionMinor === 0) return 400;
    if (te !== undefined && te.trim().toLowerCase() !== 'chunked') return 501;
    return 0;
  }

  return function strictHead(req, res, next) {
    if (req.stream !== undefined) { // HTTP/2: its own framing; :authority is the Host (tls-context.js)
      if (req.headers.host !== undefined && !isValidHost(req.headers.host)) return site.sendError(req, res, 400);
      return next();
    }
    const status = headProblem(req);
    if (status !== 0) return refuse(req, res, status);
    if (req.url[0] !== '/' && !takeTargetHost(req)) return refuse(req, res, 400);
    return next();
  };
}

module.exports = { createStrictHeadStage };
