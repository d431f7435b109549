'use strict';
// The reverse-proxy stage: requests matching a `proxy` rule (path prefix, optional host; first
// match wins) go to one of the rule's upstreams; the rest pass on to the next stage.
//
//   createProxyStage(site, { cache }) -> null (no `proxy` rules) | stage(req, res, next)
//     cache: the pipeline's response cache (../cache/), or null: rules with `"cache": true` use it
//     An HTTP/1.1 Upgrade request (WebSocket) comes through the pipeline like any other, with a
//     response on its socket and req.upgradeHead (lib/net/upgrade.js); so does an HTTP/2
//     extended CONNECT (the worker's 'connect' listener). A matching rule tunnels them when
//     upgrade-policy.js allows it.
//     stage.upstreamHealth() -> [{ upstream, up }]  for the metrics
//     stage.prepare()         starts the active health checks (the worker, before it listens;
//                             a pipeline built only to check a config never calls it)
//     stage.close()           stops active health checks (pooled idle connections time out)
//
// site: { config, sendError(req, res, status, options), log }.
// Parts: rules.js (the rules, compiled once), forward.js (one request), upgrade.js (WebSocket
// tunnels), upgrade-policy.js (which upgrades are tunnelled), forward-headers.js (headers),
// and the response cache (../cache/, which the gateway shares). Picking, retrying, health and the
// HTTP transport are the upstream seam's (../upstream/), which a second protocol's gateway shares.

const { compileProxyRules, findRule } = require('./rules');
const { compileTrustedProxies } = require('../../http/trusted-proxies');
const { splitTarget } = require('../../http/target');
const { forward, refuseLargeBody } = require('./forward');
const { declaredOver } = require('../upstream');
const { tunnel } = require('./upgrade');
const { upgradeDecision } = require('./upgrade-policy');

function createProxyStage(site, { cache = null } = {}) {
  const { config } = site;
  if (!Array.isArray(config.proxy) || config.proxy.length === 0) return null;
  const { rules, errors } = compileProxyRules(config);
  const trusted = compileTrustedProxies(config.trustedProxies);
  const problems = [...errors, ...trusted.errors];
  if (problems.length) throw new Error(problems.join('\n'));
  const ctx = { isTrusted: trusted.isTrusted, sendError: site.sendError, log: site.log };

  function stage(req, res, next) {
    const rule = findRule(rules, req, splitTarget(req.url).path);
    if (!rule) return next();
    if (isTunnel(req)) {
      const decision = upgradeDecision(req, rule);
      if (decision.protocol) return tunnel(req, res, rule, ctx, decision.protocol);
      if (!decision.forward) {
        for (const [name, value] of Object.entries(decision.headers || {})) res.setHeader(name, value);
        return ctx.sendError(req, res, decision.status);
      }
      return forward(req, res, rule, ctx); // an unlisted protocol: as an ordinary request, uncached
    }
    if (declaredOver(req, rule.maxBodySize)) return refuseLargeBody(req, res, rule, ctx);
    if (rule.cache && cache !== null) return req.method === 'PURGE' ? cache.purge(req, res, rule, ctx) : cache.handle(req, res, rule, ctx, forward);
    return forward(req, res, rule, ctx);
  }

  stage.upstreamHealth = () => rules.flatMap((rule) => rule.pool.upstreams.map((u) => ({ upstream: u.label, up: u.isUp() })));

  stage.prepare = () => {
    for (const rule of rules) rule.pool.startChecks({ 'user-agent': 'svr-health-check' });
  };

  stage.close = () => {
    for (const rule of rules) rule.pool.stopChecks();
  };
  return stage;
}

// An HTTP/1.1 Upgrade (given to us with the bytes read past its headers) or an HTTP/2 CONNECT
// with a :protocol (RFC 8441).
function isTunnel(req) {
  return req.upgradeHead !== undefined || (req.method === 'CONNECT' && req.httpVersionMajor === 2 && Boolean(req.headers[':protocol']));
}

module.exports = { createProxyStage };
