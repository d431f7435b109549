'use strict';
// Forwards one HTTP request to an upstream of its rule and streams the answer back: the rule says
// what to ask for (path, headers) and how to edit the answer's headers; the upstream seam
// (../upstream/) picks the upstream, retries and records health, and the upstream's transport
// (the HTTP one, upstream/http.js) connects, sends and streams.
//
// hooks (the cache, cache/index.js): { requestHeaders: headers set for the upstream (a
// revalidation's If-None-Match; undefined: left out), onResponse(upRes, headers) -> 'handled'
// (the hook answered the client itself) | tap { data(chunk), end(), abort() } to see the body as
// it streams | null,
// onFailure(status) -> true when it answered the client instead of the error page,
// onNoResponse() when the client left before any response }

const { tryUpstreams } = require('../upstream');
const { upstreamRequestHeaders, clientResponseHeaders } = require('./forward-headers');
const { upstreamPath } = require('./rules');

// ctx: { isTrusted, sendError, log }
function forward(req, res, rule, ctx, hooks = null) {
  const { log, sendError } = ctx;
  const answerFailure = hooks && hooks.onFailure;
  tryUpstreams(req, res, { pool: rule.pool, retries: rule.retries, log, sendError, answerFailure }, (upstream, onFailure) => {
    const { target } = upstream;
    const headers = upstreamRequestHeaders(req, rule, target, ctx);
    if (hooks && hooks.requestHeaders) setHeaders(headers, hooks.requestHeaders);
    upstream.transport.send(req, res, upstream, {
      path: upstreamPath(rule, target, req.url),
      headers,
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

function setHeaders(headers, changes) {
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) delete headers[name];
    else headers[name] = value;
  }
}

module.exports = { forward };
