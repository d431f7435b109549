'use strict';
// Forwards one HTTP request to an upstream of its rule and streams the answer back: the rule says
// what to ask for (path, headers) and how to edit the answer's headers; the upstream seam
// (../upstream/) picks the upstream, retries and records health, and the upstream's transport
// (the HTTP one, upstream/http.js) connects, sends and streams.

const { tryUpstreams } = require('../upstream');
const { upstreamRequestHeaders, clientResponseHeaders } = require('./forward-headers');
const { upstreamPath } = require('./rules');

// ctx: { isTrusted, sendError, log }
function forward(req, res, rule, ctx) {
  const { log, sendError } = ctx;
  tryUpstreams(req, res, { pool: rule.pool, retries: rule.retries, log, sendError }, (upstream, onFailure) => {
    const { target } = upstream;
    upstream.transport.send(req, res, upstream, {
      path: upstreamPath(rule, target, req.url),
      headers: upstreamRequestHeaders(req, rule, target, ctx),
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

module.exports = { forward };
