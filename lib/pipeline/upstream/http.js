'use strict';
// The HTTP transport (upstream/index.js): http://host:port[/base], https://host:port[/base] and
// unix:/path/to/socket, each upstream with its own keep-alive agent (Node's http.Agent /
// https.Agent: pooled connections, reused last-in-first-out so idle ones time out).
//
// send(): one request, streamed both ways with backpressure: req.pipe(upstream request), upstream
// response.pipe(res); pipe() pauses the source while the destination's buffer is full, so a 1 GiB
// body in either direction holds only a few socket buffers in memory. Timeouts: connect (a new
// connection to the upstream), headers (from sending the request to the response's headers) and
// idle (no byte either way on the upstream socket). A connect failure is a 502, a timeout before
// the headers a 504; after the headers the client's response is cut (its status is on the wire).

const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const { requestHasBody } = require('./retry');
const { writeHeadFrom } = require('../../http/headers');

const EXPECTED = 'an http://, https:// or unix:/absolute/path';
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOENT', 'EAI_AGAIN', 'ENOTFOUND', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

// "http://host:port/base", "https://host/base", "unix:/path/to/socket" ->
// { protocol, hostname, port, socketPath, basePath, label } or { error }.
function parse(text) {
  const expected = `expected ${EXPECTED} upstream`;
  if (typeof text !== 'string') return { error: expected };
  if (text.startsWith('unix:')) {
    const socketPath = text.slice(5);
    if (!socketPath.startsWith('/')) return { error: `${expected} (a unix socket path must be absolute)` };
    return { protocol: 'http:', socketPath, hostname: 'localhost', port: undefined, basePath: '', label: text };
  }
  let url;
  try {
    url = new URL(text);
  } catch {
    return { error: expected };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { error: expected };
  if (url.search || url.hash || url.username || url.password) return { error: `${expected} without query, fragment or credentials` };
  return {
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : undefined,
    host: url.host,
    socketPath: undefined,
    basePath: url.pathname === '/' ? '' : url.pathname.replace(/\/$/, ''),
    label: `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`,
  };
}

// The per-upstream state: the module to ask and its keep-alive agent.
function connection(target, { verifyTLS, idleMs }) {
  const agentOptions = { keepAlive: true, scheduling: 'lifo', timeout: idleMs };
  if (target.protocol === 'https:') return { module: https, agent: new https.Agent({ ...agentOptions, rejectUnauthorized: verifyTLS }) };
  return { module: http, agent: new http.Agent(agentOptions) };
}

// The certificate of an https upstream is checked against the upstream's name, not the client's Host.
function serverName(target) {
  return target.protocol === 'https:' && !net.isIP(target.hostname) ? target.hostname : '';
}

// One active health check: GET path; a 2xx/3xx within check.timeout is healthy.
function check(upstream, { path, timeout }, headers, settle) {
  const { target } = upstream;
  const req = upstream.connection.module.request({
    agent: upstream.connection.agent,
    method: 'GET',
    hostname: target.hostname,
    port: target.port,
    socketPath: target.socketPath,
    path: target.basePath + path,
    headers: { host: target.host || 'localhost', ...headers },
    timeout,
  }, (res) => {
    res.resume();
    settle(res.statusCode >= 200 && res.statusCode < 400);
  });
  req.on('timeout', () => { settle(false); req.destroy(); });
  req.on('error', () => settle(false));
  req.end();
}

// One try. exchange: { path (path + query to ask for), headers (to send), body (read whole, or
// null: req streams), maxBodySize, refuseBody() (a streamed body went past maxBodySize),
// timeouts: { connect, headers, idle }, responseHeaders(upRes) -> the headers for the client,
// log, onResponse? }.
// onResponse(upRes, headers) (the proxy cache): 'handled' when it answered the client itself
// (then it consumes upRes), or a tap { data(chunk), end(), abort() } that sees the body as it
// streams to the client, or null. onNoResponse() (the cache): the client left before any response.
// onFailure: see retry.js; called at most once, only before a response header reached the client.
function send(req, res, upstream, exchange, onFailure) {
  const { target } = upstream;
  const { timeouts } = exchange;
  let connected = false;
  let responded = false;
  let finished = false;
  let headersTimer = null;
  upstream.active++;
  const done = () => {
    if (finished) return;
    finished = true;
    upstream.active--;
    clearTimeout(headersTimer);
  };
  const fail = (failure) => {
    if (finished) return;
    done();
    upReq.destroy();
    onFailure(failure);
  };

  const upReq = upstream.connection.module.request({
    agent: upstream.connection.agent,
    method: req.method,
    hostname: target.hostname,
    port: target.port,
    socketPath: target.socketPath,
    path: exchange.path,
    headers: exchange.headers,
    servername: serverName(target),
  });

  // A kept-alive socket's bytes read before this request: any more by an error means the upstream
  // had started answering it, so a reset then is no stale connection and must not be retried.
  let upSocket = null;
  let bytesBefore = 0;
  upReq.on('socket', (socket) => {
    upSocket = socket;
    bytesBefore = socket.bytesRead;
    if (!socket.connecting) {
      connected = true;
      return;
    }
    const timer = setTimeout(() => fail({ status: 502, reason: `no connection within ${timeouts.connect} ms`, beforeRequestSent: true, countsAgainstUpstream: true }), timeouts.connect);
    socket.once('connect', () => { connected = true; clearTimeout(timer); });
    socket.once('close', () => clearTimeout(timer));
  });
  headersTimer = setTimeout(() => fail({ status: 504, reason: `no response headers within ${timeouts.headers} ms`, countsAgainstUpstream: true }), timeouts.headers);
  upReq.setTimeout(timeouts.idle, () => {
    if (!responded) fail({ status: 504, reason: `idle for ${timeouts.idle} ms`, countsAgainstUpstream: true });
    else upReq.destroy(new Error(`idle for ${timeouts.idle} ms`));
  });

  let tap = null; // the cache's, once a response came: what it keeps must not outlive an error
  upReq.on('error', (error) => {
    if (responded) { // mid-body, or bytes past the response (more than its Content-Length)
      if (tap) tap.abort();
      return res.destroy(); // the client's response is cut
    }
    const answering = upSocket !== null && upSocket.bytesRead > bytesBefore;
    const reusedReset = upReq.reusedSocket && !answering && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
    const connectFailure = !connected && CONNECT_ERRORS.has(error.code);
    return fail({
      status: 502,
      reason: error.code || error.message,
      beforeRequestSent: connectFailure || reusedReset,
      reusedReset,
      countsAgainstUpstream: connectFailure,
    });
  });

  upReq.on('response', (upRes) => {
    responded = true;
    clearTimeout(headersTimer);
    upstream.recordSuccess();
    const headers = exchange.responseHeaders(upRes);
    const answer = exchange.onResponse ? exchange.onResponse(upRes, headers) : null;
    if (answer === 'handled') return done();
    tap = answer;
    try {
      writeHeadFrom(req, res, upRes.statusCode, upRes.statusMessage, headers);
    } catch (error) { // a header value Node refuses to send on (HTTP/2 is stricter)
      upRes.destroy();
      done();
      if (tap) tap.abort();
      exchange.log.warn(`proxy: ${upstream.label}: unusable response header: ${error.message}`);
      return exchange.sendError(req, res, 502);
    }
    let bytes = 0;
    upRes.on('data', (chunk) => { bytes += chunk.length; if (tap) tap.data(chunk); });
    upRes.on('end', () => { if (req.svr) req.svr.bodyBytes = bytes; done(); if (tap) tap.end(); });
    upRes.on('error', () => { done(); res.destroy(); });
    upRes.on('aborted', () => { done(); res.destroy(); });
    if (tap) upRes.once('close', () => { if (!upRes.complete) tap.abort(); });
    return upRes.pipe(res);
  });

  // The client went away first: stop the upstream work too, and tell the caller there will be no
  // response (the cache's fetch would otherwise stay in flight, and the next miss wait on it).
  res.once('close', () => {
    if (!finished || !res.writableFinished) {
      const noResponse = !responded && !finished;
      done();
      upReq.destroy();
      if (noResponse && exchange.onNoResponse) exchange.onNoResponse();
    }
  });

  if (exchange.body) return sendBufferedBody(exchange.body, upReq, (error) => fail({ status: 500, reason: `the buffered request body could not be read: ${error.message}` }));
  if (!requestHasBody(req)) return upReq.end();
  // Node frames a body it has no Content-Length for only for the methods it expects one with
  // (POST, PUT, ...): a GET's or an OPTIONS's body, chunked by the client (Transfer-Encoding is
  // hop-by-hop, not forwarded) or sent in HTTP/2 DATA frames, went out raw, and the upstream read
  // it as the next request on the kept-alive connection: a request smuggled past every rule, then
  // answered to whoever was next on that connection. Such a body is sent chunked.
  if (!upReq.hasHeader('content-length')) {
    upReq.useChunkedEncodingByDefault = true;
    limitBody(req, exchange.maxBodySize, () => {
      req.unpipe(upReq);
      done();
      upReq.destroy();
      exchange.refuseBody();
    });
  }
  req.pipe(upReq);
  req.on('error', () => upReq.destroy());
  return undefined;
}

// A body read whole (exchange.body, with its Content-Length among the headers). Its file failing
// (cut short, an I/O error) is svr's failure, not the upstream's: unreadable(error), no retry.
function sendBufferedBody(body, upReq, unreadable) {
  const source = body.open();
  source.on('error', unreadable);
  source.pipe(upReq);
}

// A body of unknown length (chunked, or HTTP/2 without content-length) is counted as it streams;
// past maxBytes, tooLarge() once.
function limitBody(req, maxBytes, tooLarge) {
  if (!(maxBytes < Infinity)) return;
  let bytes = 0;
  const count = (chunk) => {
    bytes += chunk.length;
    if (bytes <= maxBytes) return;
    req.removeListener('data', count);
    tooLarge();
  };
  req.on('data', count);
}

module.exports = { name: 'http', schemes: ['http:', 'https:', 'unix:'], expected: EXPECTED, parse, connection, serverName, check, send };
