'use strict';
// Builds the servers a worker listens with. Each entry says what it listens on, so the
// worker can bind them, report them, and close them when it drains.

const http = require('node:http');

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

function createListeners(config, handler) {
  const server = http.createServer(serverOptions(config), handler);
  applyTimeouts(server, config);
  return [{ server, port: config.port, scheme: 'http' }];
}

module.exports = { createListeners, serverOptions, applyTimeouts };
