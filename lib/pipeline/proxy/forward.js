'use strict';
// Forwards one HTTP request to an upstream of its rule and streams the answer back.
//
// - Streaming both ways with backpressure: req.pipe(upstream request), upstream response.pipe(res);
//   pipe() pauses the source while the destination's buffer is full, so a 1 GiB body in either
//   direction holds only a few socket buffers in memory.
// - Timeouts (the rule's `timeouts`): connect (a new connection to the upstream), headers (from
//   sending the request to the response's headers) and idle (no byte either way on the upstream
//   socket). A connect failure answers 502, a timeout before the headers 504; after the headers
//   the client's response is cut (its status is already on the wire).
// - Retries: only for idempotent methods without a request body, only before any response byte,
//   and only after a failure to connect (another upstream) or a reset of a reused keep-alive
//   connection (the upstream closed it as we sent: the same upstream may be tried again).
// - hooks (the cache, cache/index.js): { requestHeaders: extra headers for the upstream (a
//   revalidation's If-None-Match), onResponse(upRes, headers) -> 'handled' (the hook answered the
//   client itself) | tap { data(chunk), end(), abort() } to see the body as it streams | null,
//   onFailure(status) -> true when it answered the client instead of the error page }

const net = require('node:net');
const { upstreamRequestHeaders, clientResponseHeaders } = require('./forward-headers');
const { upstreamPath } = require('./rules');

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOENT', 'EAI_AGAIN', 'ENOTFOUND', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

function requestHasBody(req) {
  if (req.httpVersionMajor === 2) return !(req.stream && req.stream.endAfterHeaders);
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

// ctx: { isTrusted, sendError, log }
function forward(req, res, rule, ctx, hooks = null) {
  const canRetry = IDEMPOTENT.has(req.method) && !requestHasBody(req);
  const tried = new Set();
  let retriesLeft = rule.retries;

  const giveUp = (status, upstream, reason) => {
    ctx.log.warn(`proxy: ${req.method} ${req.url} -> ${upstream ? upstream.label : 'no upstream'}: ${reason}; answering ${status}`);
    if (hooks && hooks.onFailure && !res.headersSent && hooks.onFailure(status)) return;
    if (!res.headersSent) ctx.sendError(req, res, status);
    else res.destroy();
  };

  const attempt = () => {
    const upstream = rule.pool.pick(tried);
    if (!upstream) return giveUp(502, null, 'every upstream failed');
    tried.add(upstream);
    send(req, res, rule, upstream, ctx, hooks, (failure) => {
      const retry = canRetry && retriesLeft > 0 && !res.headersSent && !res.destroyed && failure.beforeRequestSent;
      if (failure.reusedReset) tried.delete(upstream); // the connection was stale, not the upstream
      else if (failure.countsAgainstUpstream) upstream.recordFailure(rule.pool.passive);
      if (retry) {
        retriesLeft--;
        return attempt();
      }
      return giveUp(failure.status, upstream, failure.reason);
    });
  };
  attempt();
}

// One try. onFailure({ status, reason, beforeRequestSent, reusedReset, countsAgainstUpstream })
// is called at most once, and only while no response header has reached the client.
function send(req, res, rule, upstream, ctx, hooks, onFailure) {
  const { target } = upstream;
  const { timeouts } = rule;
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

  const upReq = upstream.module.request({
    agent: upstream.agent,
    method: req.method,
    hostname: target.hostname,
    port: target.port,
    socketPath: target.socketPath,
    path: upstreamPath(rule, target, req.url),
    headers: hooks && hooks.requestHeaders ? { ...upstreamRequestHeaders(req, rule, target, ctx), ...hooks.requestHeaders } : upstreamRequestHeaders(req, rule, target, ctx),
    // Verify the upstream's certificate against the upstream's name, not the client's Host.
    servername: target.protocol === 'https:' && !net.isIP(target.hostname) ? target.hostname : '',
  });

  upReq.on('socket', (socket) => {
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

  upReq.on('error', (error) => {
    if (responded) return res.destroy(); // mid-body: the client's response is cut
    const reusedReset = upReq.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
    const connectFailure = !connected && CONNECT_ERRORS.has(error.code);
    fail({
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
    const headers = clientResponseHeaders(upRes, rule);
    if (res.hasHeader('server')) delete headers.server; // svr's own Server header stands
    const tap = hooks && hooks.onResponse ? hooks.onResponse(upRes, headers) : null;
    if (tap === 'handled') return done();
    try {
      res.writeHead(upRes.statusCode, upRes.statusMessage, headers);
    } catch (error) { // a header value Node refuses to send on (HTTP/2 is stricter)
      upRes.destroy();
      done();
      ctx.log.warn(`proxy: ${upstream.label}: unusable response header: ${error.message}`);
      return ctx.sendError(req, res, 502);
    }
    let bytes = 0;
    upRes.on('data', (chunk) => { bytes += chunk.length; if (tap) tap.data(chunk); });
    upRes.on('end', () => { if (req.svr) req.svr.bodyBytes = bytes; done(); if (tap) tap.end(); });
    upRes.on('error', () => { done(); res.destroy(); if (tap) tap.abort(); });
    upRes.on('aborted', () => { done(); res.destroy(); if (tap) tap.abort(); });
    if (tap) upRes.once('close', () => { if (!upRes.complete) tap.abort(); });
    upRes.pipe(res);
  });

  // The client went away first: stop the upstream work too.
  res.once('close', () => {
    if (!finished || !res.writableFinished) {
      done();
      upReq.destroy();
    }
  });

  if (requestHasBody(req)) {
    req.pipe(upReq);
    req.on('error', () => upReq.destroy());
  } else {
    upReq.end();
  }
}

module.exports = { forward, requestHasBody };
