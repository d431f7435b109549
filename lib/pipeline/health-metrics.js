'use strict';
// Stage: `health` and `metrics.onSitePort`. The health path answers 200 "ok" while the worker
// serves and 503 "draining" once it drains (stop, reload, recycle), so a load balancer moves
// traffic away while in-flight requests finish. The metrics path (only with metrics.onSitePort:
// the totals name internal upstream addresses) answers the Prometheus text the primary renders.
// Both come after the blocklist, so a blocked client gets 403 here too, and before sanitizing
// and rewriting: a rewrite rule never hides them. Their answers are neither access-logged nor
// counted (req.svr.internal).
//
// options: { isDraining() -> boolean, scrapeMetrics() -> Promise<string> } from the worker.

function createHealthMetricsStage(site, { isDraining = () => false, scrapeMetrics = null } = {}) {
  const { health, metrics } = site.config;
  const routes = new Map();
  if (health) routes.set(health.path, (req, res) => answerHealth(res, isDraining()));
  if (metrics && metrics.onSitePort === true && scrapeMetrics) {
    routes.set(metrics.path, (req, res) => answerMetrics(req, res, scrapeMetrics));
  }
  if (routes.size === 0) return null;
  return function healthAndMetrics(req, res, next) {
    const url = req.url || '';
    const query = url.indexOf('?');
    const answer = routes.get(query === -1 ? url : url.slice(0, query));
    if (answer === undefined) return next();
    req.svr.internal = true;
    return answer(req, res);
  };
}

function answerHealth(res, draining) {
  res.writeHead(draining ? 503 : 200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
  res.end(draining ? 'draining\n' : 'ok\n');
}

function answerMetrics(req, res, scrapeMetrics) {
  return scrapeMetrics().then((text) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : text);
  }, (error) => {
    res.writeHead(503, { 'content-type': 'text/plain' });
    res.end(`metrics unavailable: ${error.message}\n`);
  });
}

module.exports = { createHealthMetricsStage };
