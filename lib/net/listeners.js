'use strict';
// Builds the servers a worker listens with. Each entry says what it listens on, so the
// worker can bind them, report them, and close them when it drains.

const http = require('node:http');
const { createSecureServer, createRedirectHandler } = require('./tls-context');
const { handleUpgrade } = require('./upgrade');

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
}

// handler(req, res, handle?): the worker's entry point; `handle`, when given, answers the
// request instead of the pipeline (the plain listener's redirect to HTTPS).
// onConnect(req, socket, head): CONNECT requests (Node would close the connection unanswered
// without a listener). Requests with an Upgrade header go to handler as well (upgrade.js).
function createListeners(config, handler, onConnect) {
  const listeners = [];
  if (!config.secure || !config.disableNonEncryptedServer) {
    const redirect = config.secure && !config.disableToHTTPSRedirect ? createRedirectHandler(config) : null;
    const server = http.createServer(serverOptions(config), redirect ? (req, res) => handler(req, res, redirect) : handler);
    applyTimeouts(server, config);
    listeners.push({ server, port: config.port, scheme: 'http' });
  }
  if (config.secure) {
    const { server, drain, reload } = createSecureServer(config, handler, serverOptions(config));
    applyTimeouts(server, config);
    listeners.push({ server, port: config.sport, scheme: 'https', drain, reload });
  }
  for (const { server } of listeners) {
    if (onConnect) server.on('connect', onConnect);
    server.on('upgrade', (req, socket, head) => handleUpgrade(req, socket, head, handler));
  }
  return listeners;
}

module.exports = { createListeners, serverOptions, applyTimeouts };
