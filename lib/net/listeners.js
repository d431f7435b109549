'use strict';
// Builds the servers a worker listens with. Each entry says what it listens on, so the
// worker can bind them, report them, and close them when it drains.

const http = require('node:http');
const { createSecureServer } = require('./tls-context');
const { SvrResponse } = require('../http/response');
const { requireProxyProtocol } = require('./proxy-protocol');
const { compileTrustedProxies } = require('../http/trusted-proxies');
const log = require('../log');
const { answerParserErrors } = require('./parser-errors');
const { handleUpgrade } = require('./upgrade');
const { answerHttp09 } = require('./http09');
const { parseListenAddress } = require('../config/listen-address');
const { closeSilentConnections, heardFrom } = require('./silent-connections');
const { boundPipelining } = require('./pipelining');
const { maxConnections, limitConnections } = require('./connection-limit');
const { advertisingResponse } = require('./keep-alive');
const { closeStalledSends } = require('./http1-send-timeout');

// Requests of one HTTP/1.1 connection handled at once; more pipelined ones wait their turn.
// apt pipelines 10 deep by default (Acquire::http::Pipeline-Depth): they all run at once.
const MAX_PIPELINED_RUNNING = 16;

// SvrResponse (http/response.js) for HTTP/1 responses, over TLS too (Http1ServerResponse: the
// HTTP/2 server's HTTP/1 side).
function serverOptions(config) {
  const Response = responseClass(config.keepAliveTimeout);
  return {
    ServerResponse: Response,
    Http1ServerResponse: Response,
    keepAliveTimeout: 0, // see applyTimeouts
    headersTimeout: config.headersTimeout,
    requestTimeout: config.requestTimeout,
    maxHeaderSize: config.maxHeaderSize,
  };
}

// One class per keepAliveTimeout, made once: the responses of both listeners share their shape.
const responseClasses = new Map();
function responseClass(keepAliveMs) {
  if (!responseClasses.has(keepAliveMs)) responseClasses.set(keepAliveMs, advertisingResponse(SvrResponse, keepAliveMs));
  return responseClasses.get(keepAliveMs);
}

// keepAliveTimeout is the worker's to enforce (keep-alive.js): Node's server is given 0, so it arms
// no timer per response, and svr's responses still announce the configured timeout.
function applyTimeouts(server, config) {
  server.keepAliveTimeout = 0;
  server.headersTimeout = config.headersTimeout;
  server.requestTimeout = config.requestTimeout;
  answerParserErrors(server); // net/parser-errors.js: parser errors get their RFC status; every header is counted
}

// Each listener: { server, port (as configured), listen ({ port, host } or { path }: server.listen's
// options), scheme, onRequest }.
// handlers: { site(req, res), httpsRedirect(req, res), connect?(req, socket, head), acmeAnswers? },
// the worker's entry points (acmeAnswers: the TLS-ALPN-01 answers, with ACME on). The plain
// listener of an HTTPS site answers with httpsRedirect unless disableToHTTPSRedirect is set.
// CONNECT requests go to handlers.connect (without a listener Node would close the connection
// unanswered); requests with an Upgrade header go to the listener's request handler as well
// (upgrade.js).
function createListeners(config, handlers) {
  const listeners = [];
  const handler = handlers.site;
  if (hasPlainListener(config)) {
    const redirect = config.secure && !config.disableToHTTPSRedirect;
    const onRequest = redirect ? handlers.httpsRedirect : handler;
    const server = http.createServer(serverOptions(config), requestHandler(onRequest));
    answerHttp09(server); // http09.js: before any other 'connection' listener
    applyTimeouts(server, config);
    closeSilentConnections(server, config.headersTimeout);
    closeStalledSends(server, Number(config.sendTimeout) || 0); // http1-send-timeout.js
    expectProxyHeader(server, config, 'http');
    listeners.push({ server, port: config.port, listen: parseListenAddress(config.port), scheme: 'http', onRequest });
  }
  if (config.secure) {
    const { server, drain, reload } = createSecureServer(config, requestHandler(handler), serverOptions(config), { acmeAnswers: handlers.acmeAnswers });
    applyTimeouts(server, config);
    closeSilentConnections(server, config.headersTimeout);
    // HTTPS/1.1 connections; HTTP/2 ones have their own send timeout (tls-context.js)
    closeStalledSends(server, Number(config.sendTimeout) || 0, { secure: true });
    expectProxyHeader(server, config, 'https');
    listeners.push({ server, port: config.sport, listen: parseListenAddress(config.sport), scheme: 'https', drain, reload, onRequest: handler });
  }
  // A CONNECT or an Upgrade request is a request head too: its connection is no longer silent,
  // and the tunnel that may follow is the proxy's (tunnelIdle) or the taker's to time out.
  for (const { server, onRequest } of listeners) {
    if (handlers.connect) server.on('connect', (req, socket, head) => { heardFrom(req); handlers.connect(req, socket, head); });
    server.on('upgrade', (req, socket, head) => { heardFrom(req); handleUpgrade(req, socket, head, onRequest); });
  }
  limitConnections(listeners.map(({ server }) => server), maxConnections(config));
  return listeners;
}

// What a listener runs for each request: the connection is no longer silent, then the request
// takes its turn among the connection's pipelined ones.
function requestHandler(onRequest) {
  const pipelined = boundPipelining(onRequest, MAX_PIPELINED_RUNNING);
  return function request(req, res) {
    heardFrom(req);
    pipelined(req, res);
  };
}

// The plain HTTP listener exists unless an HTTPS site turns it off.
function hasPlainListener(config) {
  return !config.secure || !config.disableNonEncryptedServer;
}

// acceptProxyProtocol: true (both listeners) or { http, https }.
function expectProxyHeader(server, config, scheme) {
  const wanted = config.acceptProxyProtocol;
  if (wanted !== true && !(wanted && wanted[scheme] === true)) return;
  const { isTrusted } = compileTrustedProxies(config.trustedProxies);
  requireProxyProtocol(server, { isTrusted, timeoutMs: config.headersTimeout, log });
}

module.exports = { createListeners, hasPlainListener, serverOptions, applyTimeouts };
