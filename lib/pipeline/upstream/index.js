'use strict';
// Upstreams, for any stage that hands a request to another server: the reverse proxy today, a
// FastCGI gateway next. What is shared is everything but the protocol:
//   pool.js    Upstream (one target: its open-request count and health) and UpstreamPool
//              (round robin or least connections over the healthy ones, active health checks)
//   retry.js   tryUpstreams: pick an upstream, send, on a failure before any response byte
//              retry another (idempotent requests without a body, or with one read whole,
//              only), then give up with 502/504
//   http.js    the HTTP transport (http://, https://, unix:), the one the proxy speaks
//   request-body.js  a request body read whole before an upstream is asked (requestBuffering)
//
// A transport is { name, schemes: ['scheme:', ...],
//   parse(text) -> target | { error }       a target: { label, ... } (what the transport needs)
//   connection(target, { verifyTLS, idleMs }) -> its per-upstream state (pooled connections)
//   check(upstream, { path, timeout }, headers, settle(ok))   one active health check
//   send(req, res, upstream, exchange, onFailure)             one try (see http.js) }
// A second protocol adds a file here and a line to TRANSPORTS; the schema's upstream pattern
// (config/svr-config.schema.json) names the schemes a config may use.

const http = require('./http');
const { Upstream, UpstreamPool } = require('./pool');
const { tryUpstreams, requestHasBody } = require('./retry');
const { readBodyFirst, declaredOver, refuseBody } = require('./request-body');

const TRANSPORTS = [http];

// "scheme:..." -> { transport, target } | { error }
function parseUpstream(text) {
  const transport = typeof text === 'string' ? TRANSPORTS.find((t) => t.schemes.some((scheme) => text.startsWith(scheme))) : undefined;
  if (!transport) return { error: `expected ${TRANSPORTS.map((t) => t.expected).join(' or ')} upstream` };
  const target = transport.parse(text);
  return target.error ? target : { transport, target };
}

function createUpstream({ transport, target }, options) {
  return new Upstream(target, transport, options);
}

module.exports = { parseUpstream, createUpstream, UpstreamPool, tryUpstreams, requestHasBody, readBodyFirst, declaredOver, refuseBody, TRANSPORTS };
