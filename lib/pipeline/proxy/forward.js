'use strict';
// Forwards one HTTP request to an upstream of its rule and streams the answer back: the rule says
// what to ask for (path, headers) and how to edit the answer's headers; the upstream seam
// (../upstream/) picks the upstream, retries and records health, and the upstream's transport
// (the HTTP one, upstream/http.js) connects, sends and streams.
//
// The request body streams to the upstream as it arrives, unless the rule has `requestBuffering`:
// then it is read whole first (upstream/request-body.js) and sent with a Content-Length, so a slow
// upload holds no upstream connection, and a PUT or DELETE is retried on another upstream as a GET
// is (a streamed body is not: what went to the failed upstream is gone). Either way a body over
// the rule's `maxBodySize` gets 413: a Content-Length over it before anything is read (the proxy
// stage), a body without one once that many bytes came.
//
// hooks (the cache, cache/index.js): { requestHeaders: headers set for the upstream (a
// revalidation's If-None-Match; undefined: left out), onResponse(upRes, headers) -> 'handled'
// (the hook answered the client itself) | tap { data(chunk), end(), abort() } to see the body as
// it streams | null,
// onFailure(status) -> true when it answered the client instead of the error page,
// onNoResponse() when the client left before any response }

const { tryUpstreams, requestHasBody, readBodyFirst, refuseBody } = require('../upstream');
const { upstreamRequestHeaders, clientResponseHeaders } = require('./forward-headers');
const { upstreamPath } = require('./rules');

// ctx: { isTrusted, sendError, log }
function forward(req, res, rule, ctx, hooks = null) {
  if (!rule.requestBuffering || !requestHasBody(req)) return send(req, res, rule, ctx, hooks, null);
  let over = false;
  const cancel = readBodyFirst(req, {
    maxBytes: rule.maxBodySize,
    isOver: () => over,
    fail: (status, reason) => {
      if (hooks && hooks.onNoResponse) hooks.onNoResponse();
      if (status === 413) return refuseLargeBody(req, res, rule, ctx);
      ctx.log.warn(`${rule.at}: ${req.method} ${req.url}: ${reason}; answering ${status}`);
      return ctx.sendError(req, res, status);
    },
    next: (body) => {
      res.once('close', () => body.dispose());
      send(req, res, rule, ctx, hooks, body);
    },
  });
  res.once('close', () => {
    if (over) return;
    over = true;
    cancel();
  });
  return undefined;
}

// body: the request body read whole (requestBuffering), or null: it streams from req.
function send(req, res, rule, ctx, hooks, body) {
  const { log, sendError } = ctx;
  const answerFailure = hooks && hooks.onFailure;
  const options = { pool: rule.pool, retries: rule.retries, log, sendError, answerFailure, bodyReplayable: body !== null };
  tryUpstreams(req, res, options, (upstream, onFailure) => {
    const { target } = upstream;
    const headers = upstreamRequestHeaders(req, rule, target, ctx);
    if (hooks && hooks.requestHeaders) setHeaders(headers, hooks.requestHeaders);
    if (body !== null) headers['content-length'] = String(body.length);
    upstream.transport.send(req, res, upstream, {
      path: upstreamPath(rule, target, req.url),
      headers,
      body,
      maxBodySize: rule.maxBodySize,
      refuseBody: () => refuseLargeBody(req, res, rule, ctx),
      onResponse: hooks && hooks.onResponse,
      onNoResponse: hooks && hooks.onNoResponse,
      timeouts: rule.timeouts,
      responseHeaders(upRes) {
        const headers = clientResponseHeaders(upRes, rule);
        if (res.hasHeader('server')) delete headers.server; // svr's own Server header stands
        return headers;
      },
      log,
      sendError,
    }, onFailure);
  });
}

// A body over maxBodySize (../upstream/request-body.js refuseBody), with a line naming the key.
function refuseLargeBody(req, res, rule, ctx) {
  const length = req.headers['content-length'];
  const body = length === undefined ? 'a body without Content-Length' : `a body of ${length} bytes`;
  ctx.log.warn(`${rule.at}: ${req.method} ${req.url}: ${body} over ${rule.at}.maxBodySize (${rule.maxBodySize}); answering 413`);
  return refuseBody(req, res, ctx.sendError);
}

function setHeaders(headers, changes) {
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
}

module.exports = { forward, refuseLargeBody };
