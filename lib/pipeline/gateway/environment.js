'use strict';
// The RFC 3875 environment of one request, for a FastCGI application (its PARAMS) and for a CGI
// script (its process environment):
//
//   buildEnvironment(req, site, script, extra, fromTrustedProxy) -> [[name, value]]
//     script: { filename, scriptName, pathInfo } (script-path.js); extra: the rule's `env`, last,
//     so it can set or replace any variable; fromTrustedProxy: whether the peer is in
//     `trustedProxies`.
//
// Beyond RFC 3875's meta-variables: SCRIPT_FILENAME and DOCUMENT_ROOT (what PHP needs to find the
// script), REQUEST_URI (the target as the client sent it, in origin form: front controllers route
// on it),
// REQUEST_SCHEME and HTTPS, SERVER_ADDR, REMOTE_PORT, REDIRECT_STATUS (php-cgi refuses to run
// without it), and the request headers as HTTP_*. Left out:
//   - Proxy: HTTP_PROXY would be taken for the proxy setting by many HTTP libraries ("httpoxy");
//   - header names with anything but ASCII letters, digits and "-": X-Forwarded_For or
//     X.Forwarded.For would otherwise reach the script as the same HTTP_X_FORWARDED_FOR as
//     X-Forwarded-For (PHP turns "." into "_"), a way to smuggle a header past the rule below and
//     past a proxy in front (nginx drops such names too);
//   - X-Forwarded-For/-Proto/-Host, Forwarded and X-Real-IP, unless the peer is a trusted proxy:
//     claims about the client that an application might believe (REMOTE_ADDR and HTTPS say it);
//   - Content-Type and Content-Length, which are CONTENT_TYPE and CONTENT_LENGTH;
//   - HTTP/2 pseudo-headers (:authority becomes HTTP_HOST when there is no Host).

const { splitTarget, originForm } = require('../../http/target');
const { plainAddress } = require('../../http/trusted-proxies');
const { requestHost } = require('../../http/host');

// Who the client is and how it came in, as only a trusted proxy may tell.
const ADDRESS_CLAIMS = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded', 'x-real-ip']);
// The header names passed as HTTP_*: no two of them can name the same variable. Leaves out
// HTTP/2's pseudo-headers (":path") too.
const PLAIN_HEADER_NAME = /^[A-Za-z0-9-]+$/;

function buildEnvironment(req, site, script, extra, fromTrustedProxy = false) {
  const env = [];
  const add = (name, value) => env.push([name, value === undefined || value === null ? '' : String(value)]);
  const socket = req.socket || {};
  const encrypted = Boolean(socket.encrypted) || req.httpVersionMajor === 2;
  const host = requestHost(req);
  const { search } = splitTarget(req.url);
  const forwarded = req.svr.clientAddress !== undefined && req.svr.clientAddress !== socket.remoteAddress;
  const clientAddress = forwarded ? req.svr.clientAddress : socket.remoteAddress;

  add('GATEWAY_INTERFACE', 'CGI/1.1');
  add('SERVER_SOFTWARE', site.serverName);
  add('SERVER_PROTOCOL', `HTTP/${req.httpVersion}`);
  add('SERVER_NAME', host || plainAddress(socket.localAddress));
  add('SERVER_PORT', socket.localPort);
  add('SERVER_ADDR', plainAddress(socket.localAddress));
  add('REQUEST_METHOD', req.method);
  add('REQUEST_URI', originForm(req.svr.originalUrl)); // an absolute-form target's path and query, as nginx's $request_uri
  add('REQUEST_SCHEME', encrypted ? 'https' : 'http');
  if (encrypted) add('HTTPS', 'on');
  add('QUERY_STRING', search.slice(1));
  add('DOCUMENT_ROOT', site.root);
  add('SCRIPT_FILENAME', script.filename);
  add('SCRIPT_NAME', script.scriptName);
  add('PATH_INFO', script.pathInfo);
  if (script.pathInfo !== '') add('PATH_TRANSLATED', site.root + script.pathInfo);
  add('REMOTE_ADDR', plainAddress(clientAddress));
  add('REMOTE_PORT', forwarded ? '' : socket.remotePort); // a forwarded client's port is unknown
  if (req.svr.user) {
    add('AUTH_TYPE', 'Basic');
    add('REMOTE_USER', req.svr.user);
  }
  add('REDIRECT_STATUS', 200);
  if (req.headers['content-type'] !== undefined) add('CONTENT_TYPE', req.headers['content-type']);
  if (req.headers['content-length'] !== undefined) add('CONTENT_LENGTH', req.headers['content-length']);
  addHeaders(req, add, fromTrustedProxy);
  for (const [name, value] of Object.entries(extra || {})) {
    const at = env.findIndex(([n]) => n === name);
    if (at !== -1) env.splice(at, 1);
    add(name, value);
  }
  return env;
}

function addHeaders(req, add, fromTrustedProxy) {
  const headers = req.headers;
  let hasHost = false;
  for (const name of Object.keys(headers)) {
    if (!PLAIN_HEADER_NAME.test(name)) continue;
    if (!fromTrustedProxy && ADDRESS_CLAIMS.has(name)) continue;
    if (name === 'proxy' || name === 'content-type' || name === 'content-length') continue;
    if (name === 'host') hasHost = true;
    const value = headers[name];
    add(`HTTP_${name.toUpperCase().replace(/-/g, '_')}`, Array.isArray(value) ? value.join(', ') : value);
  }
  if (!hasHost && headers[':authority'] !== undefined) add('HTTP_HOST', headers[':authority']);
}

module.exports = { buildEnvironment };
