'use strict';
// Builds the servers a worker listens with. Each entry says what it listens on, so the
// worker can bind them, report them, and close them when it drains.

const http = require('node:http');
const { createSecureServer } = require('./tls-context');
const { strictHttp } = require('./strict-http');

function serverOptions(config) {
  return {
    keepAliveTimeout: config.keepAliveTimeout,
    headersTimeout: config.headersTimeout,
    requestTimeout: config.requestTimeout,
    maxHeaderSize: config.maxHeaderSize,
  };
}

function applyTimeouts(server, config) {
  server.keepAliveTimeout = config.keepAliveTimeout;
  server.headersTimeout = config.headersTimeout;
  server.requestTimeout = config.requestTimeout;
  strictHttp(server); // net/strict-http.js: parser errors get their RFC status; every header is counted
}

// handlers: { site(req, res), httpsRedirect(req, res) }, the worker's entry points. The plain
// listener of an HTTPS site answers with httpsRedirect unless disableToHTTPSRedirect is set.
function createListeners(config, handlers) {
  const listeners = [];
  const handler = handlers.site;
  if (!config.secure || !config.disableNonEncryptedServer) {
    const redirect = config.secure && !config.disableToHTTPSRedirect;
    const server = http.createServer(serverOptions(config), redirect ? handlers.httpsRedirect : handler);
    applyTimeouts(server, config);
    listeners.push({ server, port: config.port, scheme: 'http' });
  }
  if (config.secure) {
    const { server, drain, reload } = createSecureServer(config, handler, serverOptions(config));
    applyTimeouts(server, config);
    listeners.push({ server, port: config.sport, scheme: 'https', drain, reload });
  }
  return listeners;
}

module.exports = { createListeners, serverOptions, applyTimeouts };
