'use strict';
// Stage: SVR.JS's status page, /svrjsstatus.svr, with `allowStatus: true` (off by default in svr:
// it tells anyone the server's load and uptime). Figures are this worker's, as in SVR.JS (each
// worker counts its own requests): uptime, requests, 4xx and 5xx answers, memory, pid, and how
// many workers the config runs. Sits after mods and serverSideScript.js, before static files.
//
//   createRequestCounters() -> { count(req, res) } used by the pipeline for every request,
//                              only when the status page is on

const os = require('node:os');
const { escapeHTML, pageHead } = require('../http/html');
const { workerCount } = require('../config/worker-count');

const STATUS_PATH = '/svrjsstatus.svr';

function createRequestCounters() {
  const counters = { requests: 0, clientErrors: 0, serverErrors: 0 };
  counters.count = (req, res) => {
    counters.requests++;
    res.once('finish', () => {
      if (res.statusCode >= 500) counters.serverErrors++;
      else if (res.statusCode >= 400) counters.clientErrors++;
    });
  };
  return counters;
}

function duration(seconds) {
  const s = Math.floor(seconds);
  return `${Math.floor(s / 86400)} days, ${Math.floor(s / 3600) % 24} hours, ${Math.floor(s / 60) % 60} minutes, ${s % 60} seconds`;
}

function createStatusStage(site, counters) {
  if (!site.config.allowStatus || !counters) return null;
  const workers = workerCount(site.config);
  return function status(req, res, next) {
    if (req.svr.pathname !== STATUS_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    const uptime = process.uptime();
    const answered = counters.clientErrors + counters.serverErrors;
    const rows = [
      ['Server', site.serverName],
      ['Current time', new Date().toString()],
      ['Worker uptime', duration(uptime)],
      ['OS uptime', duration(os.uptime())],
      ['Requests (this worker)', counters.requests],
      ['Average request rate', `${Math.round((counters.requests / uptime) * 100) / 100} requests/s`],
      ['Client errors (4xx)', counters.clientErrors],
      ['Server errors (5xx)', counters.serverErrors],
      ['Error rate', `${counters.requests ? Math.round((answered / counters.requests) * 10000) / 100 : 0}%`],
      ['Memory (this worker)', `${Math.round(process.memoryUsage.rss() / 1048576)} MiB`],
      ['Worker pid', process.pid],
      ['Workers', workers],
    ];
    const body = `${pageHead('Status')}<h1>Status</h1><table>` +
      rows.map(([name, value]) => `<tr><th>${escapeHTML(name)}</th><td>${escapeHTML(String(value))}</td></tr>`).join('') +
      '</table></main></body></html>\n';
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
    return res.end(req.method === 'HEAD' ? undefined : body);
  };
}

module.exports = { createStatusStage, createRequestCounters };
