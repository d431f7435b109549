'use strict';
// What the plain port answers when HTTPS is on (and disableToHTTPSRedirect is not set): a 301 to
// the same host, path and query on https. It runs as a short stage list of its own (see
// pipeline/index.js), after the same Server and customHeaders stages as every other response.

const net = require('node:net');
const { originForm } = require('../http/target');
const { pageHead } = require('../http/html');
const { parseListenAddress } = require('../config/listen-address');

// A Host we are willing to put into a Location: a DNS name, IPv4, or [IPv6], with an optional
// port (dropped: the redirect goes to spubport).
const HOST_RE = /^(?:([a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*)\.?|\[([0-9a-f:.]+)\])(?::\d{1,5})?$/i;
const ABSOLUTE_HTTP = /^https?:\/\/([^/?#]*)/i;
const BODY = `${pageHead('301 Moved Permanently')}<h1>301 Moved Permanently</h1>` +
  '<p>This site is served over HTTPS.</p></main></body></html>\n';
const BODY_LENGTH = Buffer.byteLength(BODY);

// The public HTTPS port used in redirects: spubport, else sport.
function publicSecurePort(config) {
  if (config.spubport !== undefined && config.spubport !== null) return Number(config.spubport);
  const listen = parseListenAddress(config.sport);
  return listen.port !== undefined && listen.port !== 0 ? listen.port : 443; // a Unix socket has no port
}

function redirectHost(req, config) {
  // absolute-form ("GET http://host/path"): its authority wins over Host (RFC 9112 §3.2.2)
  const absolute = typeof req.url === 'string' ? ABSOLUTE_HTTP.exec(req.url) : null;
  const authority = absolute ? absolute[1] : req.headers.host;
  const m = HOST_RE.exec(String(authority || ''));
  if (m) {
    if (m[1]) return m[1].toLowerCase();
    if (net.isIPv6(m[2])) return '[' + m[2].toLowerCase() + ']';
  }
  if (config.domain) return config.domain;
  const local = req.socket && req.socket.localAddress;
  if (!local) return 'localhost';
  if (local.startsWith('::ffff:') && net.isIPv4(local.slice(7))) return local.slice(7);
  return net.isIPv6(local) ? '[' + local + ']' : local;
}

function createHttpsRedirectStage(site) {
  const port = publicSecurePort(site.config);
  const portPart = port === 443 ? '' : ':' + port;
  return function redirectToHttps(req, res) {
    const target = originForm(typeof req.url === 'string' ? req.url : '/');
    const location = 'https://' + redirectHost(req, site.config) + portPart + (target.startsWith('/') ? target : '/');
    res.statusCode = 301;
    res.setHeader('Location', location);
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.setHeader('Content-Length', BODY_LENGTH);
    res.end(req.method === 'HEAD' ? undefined : BODY);
  };
}

module.exports = { createHttpsRedirectStage };
