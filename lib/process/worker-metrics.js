'use strict';
// Metrics and health, worker side.
//
// WorkerMetrics counts every request this worker answers (method, status class, body bytes,
// duration) and sends the increments to whoever sums them (the primary over IPC, or the
// in-process aggregator when single-threaded) once a second and when the worker exits.
// The health and metrics paths are a stage (pipeline/health-metrics.js); their answers are not
// counted (req.svr.internal).

const { BUCKETS } = require('./metrics');
const { bodyBytes: accessLogBodyBytes } = require('../access-log');

const REPORT_INTERVAL_MS = 1000;
const SCRAPE_TIMEOUT_MS = 2000;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'TRACE']);

class WorkerMetrics {
  // sink: { report(report, done?), scrape() -> Promise<string> }; probes: { connections(), upstreams() }
  constructor(sink, probes) {
    this.sink = sink;
    this.probes = probes;
    this.reset();
    this.timer = setInterval(() => this.flush(), REPORT_INTERVAL_MS);
    this.timer.unref();
    sink.onFlushRequest = () => this.flush();
  }

  reset() {
    this.requests = {};
    this.bytes = 0;
    this.buckets = new Array(BUCKETS.length + 1).fill(0);
    this.sum = 0;
    this.rateLimits = {}; // "rule\noutcome" -> count (pipeline/access/rate-limits.js sets req.svr.rateLimit)
    this.cache = {}; // X-Cache status -> count (pipeline/cache/ sets req.svr.cache)
    this.cacheBytes = 0; // body bytes answered from the proxy cache
  }

  observe(req, res) {
    const startedAt = process.hrtime.bigint();
    res.once('close', () => {
      if (req.svr?.internal) return;
      const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
      const key = `${METHODS.has(req.method) ? req.method : 'OTHER'} ${Math.floor(res.statusCode / 100)}xx`;
      this.requests[key] = (this.requests[key] || 0) + 1;
      this.bytes += bodyBytes(req, res);
      let i = 0;
      while (i < BUCKETS.length && seconds > BUCKETS[i]) i++;
      this.buckets[i]++;
      this.sum += seconds;
      const cached = req.svr && req.svr.cache;
      if (cached) {
        this.cache[cached] = (this.cache[cached] || 0) + 1;
        if (cached === 'HIT' || cached === 'STALE' || cached === 'REVALIDATED') this.cacheBytes += bodyBytes(req, res);
      }
      const limited = req.svr && req.svr.rateLimit;
      if (limited) {
        const name = `${limited.rule}\n${limited.outcome}`;
        this.rateLimits[name] = (this.rateLimits[name] || 0) + 1;
      }
    });
  }

  // Sends what was counted since the last report (and the gauges), then starts afresh.
  flush(done) {
    const report = {
      requests: this.requests, bytes: this.bytes, buckets: this.buckets, sum: this.sum, rateLimits: this.rateLimits, cache: this.cache, cacheBytes: this.cacheBytes,
      connections: this.probes.connections(), upstreams: this.probes.upstreams(),
    };
    this.reset();
    this.sink.report(report, done);
  }

  // The primary gathers fresh counts from every worker (this one included) before rendering.
  scrape() {
    return this.sink.scrape();
  }
}

// As the access log counts it, 0 where nobody knows it (a script's chunked body).
function bodyBytes(req, res) {
  return accessLogBodyBytes(req, res) ?? 0;
}

// The sink for a cluster worker: reports over IPC, scrapes as the 'metrics-text' question
// (process/messages.js). sink.onFlushRequest is set by the WorkerMetrics that uses it: the
// worker's dispatcher calls it on the primary's 'metrics-flush', before it renders a scrape.
function ipcSink(ask) {
  const sink = {};
  return Object.assign(sink, {
    report(report, done) {
      if (!process.connected) return done && done();
      return process.send({ type: 'metrics', report }, done && (() => done()));
    },
    scrape: () => ask('metrics-text', null, { timeoutMs: SCRAPE_TIMEOUT_MS }),
  });
}

module.exports = { WorkerMetrics, ipcSink };
