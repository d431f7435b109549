'use strict';
// Metrics, primary side: sums what the workers report and renders Prometheus' text format.
// Workers count their own requests (lib/process/worker-metrics.js) and send the increments over
// IPC about once a second and when they exit, so the totals live here and outlast any worker
// (a recycle, a reload, a crash loses at most its last second). No user code runs here: this is
// arithmetic on plain numbers from the workers and, when `metrics.port` is set, one small HTTP
// listener that answers only the metrics path.
//
//   new MetricsAggregator() .ingest(key, report) .forget(key) .count(name) .render({ workers, certificates })
//   createPrimaryMetrics(config, { pool(), certificates() }) -> hooks for primary.js, or null when metrics are off
//   (certificates: the ACME manager's status() list: expiry, failed renewals, orders)
//   createLocalMetricsSink(config) -> the same for --single-threaded, or null

const http = require('node:http');
const log = require('../log');

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const EVENTS = {
  restarts: ['svr_worker_restarts_total', 'Workers that died unexpectedly and were replaced.'],
  recycles: ['svr_worker_recycles_total', 'Workers replaced after an uncaught exception.'],
  reloads: ['svr_reloads_total', 'Completed configuration reloads (SIGHUP).'],
};

class MetricsAggregator {
  constructor() {
    this.startedAt = Date.now();
    this.requests = new Map(); // "GET 2xx" -> count
    this.responseBytes = 0;
    this.buckets = new Array(BUCKETS.length + 1).fill(0); // the last one is +Inf
    this.durationSum = 0;
    this.events = { restarts: 0, recycles: 0, reloads: 0 };
    this.gauges = new Map(); // worker key -> { connections, upstreams: [{ upstream, up }] }
    this.rateLimited = new Map(); // "rule\noutcome" -> requests refused, delayed or unavailable
    this.cacheStatuses = new Map(); // X-Cache status -> requests
    this.cacheBytes = 0;
  }

  // report: { requests: { "GET 2xx": n }, bytes, buckets: [n...], sum, connections, upstreams }
  ingest(key, report) {
    for (const [name, n] of Object.entries(report.requests || {})) this.requests.set(name, (this.requests.get(name) || 0) + n);
    this.responseBytes += report.bytes || 0;
    (report.buckets || []).forEach((n, i) => { this.buckets[i] += n; });
    this.durationSum += report.sum || 0;
    for (const [status, n] of Object.entries(report.cache || {})) this.cacheStatuses.set(status, (this.cacheStatuses.get(status) || 0) + n);
    this.cacheBytes += report.cacheBytes || 0;
    for (const [name, n] of Object.entries(report.rateLimits || {})) this.rateLimited.set(name, (this.rateLimited.get(name) || 0) + n);
    this.gauges.set(key, { connections: report.connections || 0, upstreams: report.upstreams || [] });
  }

  forget(key) {
    this.gauges.delete(key);
  }

  count(event) {
    this.events[event]++;
  }

  // rateLimits: the host's counter's status ({ keys, redis: null | { up } }), or null without one.
  // proxyCache: the cache index's status ({ entries, bytes }), or null without a caching rule.
  // certificates: the ACME manager's status() list (expiry, failed attempts, orders), [] without ACME.
  render({ workers, rateLimits = null, proxyCache = null, certificates = [] }) {
    const out = [];
    const metric = (name, type, help, samples) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, value] of samples) out.push(`${name}${labels} ${value}`);
    };
    metric('svr_http_requests_total', 'counter', 'Requests answered, by method and status class.',
      [...this.requests].sort().map(([key, n]) => {
        const [method, status] = key.split(' ');
        return [`{method="${method}",status="${status}"}`, n];
      }));
    metric('svr_http_response_bytes_total', 'counter', 'Response body bytes sent.', [['', this.responseBytes]]);
    let cumulative = 0;
    const histogram = BUCKETS.map((le, i) => {
      cumulative += this.buckets[i];
      return [`_bucket{le="${le}"}`, cumulative];
    });
    cumulative += this.buckets[BUCKETS.length];
    out.push('# HELP svr_http_request_duration_seconds Time from request to the end of the response.', '# TYPE svr_http_request_duration_seconds histogram');
    for (const [suffix, n] of histogram) out.push(`svr_http_request_duration_seconds${suffix} ${n}`);
    out.push(`svr_http_request_duration_seconds_bucket{le="+Inf"} ${cumulative}`,
      `svr_http_request_duration_seconds_sum ${Number(this.durationSum.toFixed(6))}`,
      `svr_http_request_duration_seconds_count ${cumulative}`);
    const gauges = [...this.gauges.values()];
    metric('svr_open_connections', 'gauge', 'Client connections open in the workers.', [['', gauges.reduce((sum, g) => sum + g.connections, 0)]]);
    metric('svr_workers', 'gauge', 'Workers serving.', [['', workers]]);
    for (const [event, [name, help]] of Object.entries(EVENTS)) metric(name, 'counter', help, [['', this.events[event]]]);
    metric('svr_proxy_upstream_up', 'gauge', 'Proxy upstreams: 1 when every worker considers it healthy, else 0.', upstreamSamples(gauges));
    metric('svr_rate_limited_requests_total', 'counter', 'Requests a rate limit refused (429), delayed, or refused while its store was down (503), by rule.',
      [...this.rateLimited].sort().map(([key, n]) => {
        const [rule, outcome] = key.split('\n');
        return [`{rule="${labelValue(rule)}",outcome="${outcome}"}`, n];
      }));
    if (rateLimits) {
      metric('svr_rate_limit_keys', 'gauge', 'Clients this host keeps rate-limit counters for (at most rateLimitStore.maxKeys).', [['', rateLimits.keys]]);
      if (rateLimits.redis) metric('svr_rate_limit_redis_up', 'gauge', '1 while the rate limits are counted in Redis, 0 while rateLimitStore.whenDown applies.', [['', rateLimits.redis.up ? 1 : 0]]);
    }
    if (proxyCache || this.cacheStatuses.size > 0) {
      metric('svr_proxy_cache_requests_total', 'counter', 'Requests of caching proxy rules, by X-Cache status (HIT, MISS, BYPASS, EXPIRED, REVALIDATED, STALE).',
        [...this.cacheStatuses].sort().map(([status, n]) => [`{status="${labelValue(status)}"}`, n]));
      metric('svr_proxy_cache_served_bytes_total', 'counter', 'Body bytes answered from the proxy cache.', [['', this.cacheBytes]]);
    }
    if (proxyCache) {
      metric('svr_proxy_cache_entries', 'gauge', 'Responses stored in the proxy cache (at most proxyCache.maxEntries).', [['', proxyCache.entries]]);
      metric('svr_proxy_cache_bytes', 'gauge', 'Bytes of the proxy cache\'s files (at most proxyCache.maxBytes).', [['', proxyCache.bytes]]);
      metric('svr_proxy_cache_stores_total', 'counter', 'Responses written to the proxy cache.', [['', proxyCache.stored]]);
    }
    if (certificates.length) certificateMetrics(metric, certificates);
    metric('svr_start_time_seconds', 'gauge', 'When the server started (Unix time).', [['', Math.floor(this.startedAt / 1000)]]);
    return `${out.join('\n')}\n`;
  }
}

function labelValue(text) {
  return String(text).replace(/["\\\n]/g, '_');
}

// ACME: days until each certificate expires (none until one was obtained), and the failed
// attempts and orders of this primary since it started.
function certificateMetrics(metric, certificates) {
  const label = (name) => `{name="${labelValue(name)}"}`;
  const now = Date.now();
  metric('svr_acme_certificate_expiry_days', 'gauge', 'Days until the ACME certificate expires.',
    certificates.filter((c) => c.meta && c.meta.notAfter).map((c) => [label(c.name), Number(((Date.parse(c.meta.notAfter) - now) / 86400000).toFixed(3))]));
  metric('svr_acme_renewal_failures_total', 'counter', 'Failed attempts to obtain or renew the certificate.', certificates.map((c) => [label(c.name), c.failedTotal]));
  metric('svr_acme_orders_total', 'counter', 'Orders sent to the CA.', certificates.map((c) => [label(c.name), c.orders]));
}

function upstreamSamples(gauges) {
  const up = new Map();
  for (const { upstreams } of gauges) {
    for (const { upstream, up: isUp } of upstreams) up.set(upstream, (up.get(upstream) ?? true) && isUp);
  }
  return [...up].map(([upstream, isUp]) => [`{upstream="${upstream.replace(/["\\\n]/g, '_')}"}`, isUp ? 1 : 0]);
}

// The metrics' own listener (metrics.port): only GET/HEAD of the metrics path.
function listenForScrapes(metrics, render) {
  const server = http.createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (path !== metrics.path) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      return res.end('not found\n');
    }
    return render().then((text) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : text);
    });
  });
  server.on('error', (error) => log.error(`metrics: cannot listen on ${metrics.address}:${metrics.port}: ${error.message}`));
  server.listen(metrics.port, metrics.address, () => log.info(`metrics on http://${metrics.address}:${server.address().port}${metrics.path}`));
  server.unref();
  return server;
}

// For primary.js: null when metrics are off. pool(): the serving workers. A scrape first asks
// every serving worker for its latest counts (each answers with a report on the same ordered
// channel), so what a client sent just before is counted; a worker that does not answer within
// FLUSH_TIMEOUT_MS is rendered with what it reported last.
const FLUSH_TIMEOUT_MS = 500;

function createPrimaryMetrics(config, { pool, rateLimits = () => null, proxyCache = () => null, certificates = () => [] }) {
  if (!config.metrics) return null;
  const aggregator = new MetricsAggregator();
  const waiting = new Map(); // worker id -> [resolve]
  const flushAll = () => Promise.all([...pool()].filter((w) => w.isConnected()).map((worker) => new Promise((resolve) => {
    const timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
    const list = waiting.get(worker.id) || [];
    list.push(() => { clearTimeout(timer); resolve(); });
    waiting.set(worker.id, list);
    worker.send({ type: 'metrics-flush' });
  })));
  const render = async () => {
    await flushAll();
    return aggregator.render({ workers: pool().size, rateLimits: rateLimits(), proxyCache: proxyCache(), certificates: certificates() });
  };
  if (config.metrics.port !== null && config.metrics.port !== undefined) listenForScrapes(config.metrics, render);
  return {
    aggregator,
    // A worker's 'metrics' report (process/messages.js).
    ingest(worker, report) {
      aggregator.ingest(worker.id, report);
      const list = waiting.get(worker.id);
      waiting.delete(worker.id);
      if (list) for (const resolve of list) resolve();
    },
    // The answer to a worker's 'metrics-text' question: the Prometheus text of every worker.
    render,
    onWorkerExit(worker) {
      aggregator.forget(worker.id);
    },
    count(event) {
      aggregator.count(event);
    },
  };
}

// --single-threaded: no primary; the worker's reports are summed in its own process.
function createLocalMetricsSink(config) {
  if (!config.metrics) return null;
  const aggregator = new MetricsAggregator();
  const sink = {
    report(report, done) {
      aggregator.ingest('local', report);
      if (done) done();
    },
    scrape: async () => {
      if (sink.onFlushRequest) sink.onFlushRequest();
      return aggregator.render({ workers: 1 });
    },
  };
  if (config.metrics.port !== null && config.metrics.port !== undefined) listenForScrapes(config.metrics, sink.scrape);
  return sink;
}

module.exports = { MetricsAggregator, createPrimaryMetrics, createLocalMetricsSink, listenForScrapes, BUCKETS };
