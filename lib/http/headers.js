'use strict';
// Header helpers every stage may use. Node built-ins only.

// The methods a static resource answers (OPTIONS and 405 responses list them); with
// allowPostToStaticFiles (SVR.JS's behaviour) POST too.
const ALLOW = 'GET, HEAD, OPTIONS';
const ALLOW_WITH_POST = 'GET, POST, HEAD, OPTIONS';

// The whole answer to a CONNECT nobody tunnels, written to the raw socket (SVR.JS's answer too).
const BARE_501 = 'HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

// Adds a request header name to Vary without dropping what customHeaders or another stage put
// there (a cache must key on all of them).
function appendVary(res, name) {
  const current = res.getHeader('vary');
  const value = varyWith(current, name);
  if (value !== current) res.setHeader('Vary', value);
}

// A Vary value (undefined: none yet) with `name` in it.
function varyWith(current, name) {
  if (current === undefined) return name;
  const text = String(current);
  const listed = text.split(',').map((token) => token.trim().toLowerCase());
  return listed.includes(name.toLowerCase()) || listed.includes('*') ? current : `${text}, ${name}`;
}

// res.writeHead with an upstream's status, reason phrase and headers. HTTP/2 has no reason phrase:
// giving one to Node's HTTP/2 compatibility response prints an UnsupportedWarning, so it is given
// to HTTP/1 responses only.
function writeHeadFrom(req, res, status, reason, headers) {
  if (req.httpVersionMajor >= 2 || typeof reason !== 'string') return res.writeHead(status, headers);
  return res.writeHead(status, reason, headers);
}

// "text/html; charset=utf-8" -> "text/html"
function mediaType(contentType) {
  if (!contentType) return '';
  const semi = contentType.indexOf(';');
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

module.exports = { BARE_501, ALLOW, ALLOW_WITH_POST, appendVary, varyWith, mediaType, writeHeadFrom };
