'use strict';
// One access-log line per request on stdout, in combined log format (plus the response
// time in seconds, as nginx's $request_time) or as JSON. Lines are gathered and written
// once per turn of the event loop instead of one write syscall per request; flush() writes
// what is left synchronously, so a graceful stop loses nothing.

const fs = require('node:fs');
const { switchLogFile } = require('./log-file');

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const BUFFER_LIMIT = 64 * 1024;

let pending = '';
let flushScheduled = false;
let file = null; // a LogFile when the config has accessLog, else stdout

// accessLog: a path, or null for stdout. Throws when the file cannot be opened.
function useFile(path) {
  flush();
  file = switchLogFile(file, path || null);
}

function reopen() {
  flush();
  if (file) file.reopen();
}

function flush() {
  flushScheduled = false;
  if (pending === '') return;
  let data = Buffer.from(pending);
  pending = '';
  if (file) return file.write(data);
  while (data.length > 0) {
    try {
      data = data.subarray(fs.writeSync(1, data)); // a pipe may take only part of it
    } catch (error) {
      // A full non-blocking stdout (a journald socket, say): let the stream queue the rest.
      if (error.code === 'EAGAIN') process.stdout.write(data);
      // Anything else (EPIPE: nobody reads stdout any more) loses the log, not the server.
      return;
    }
  }
}

function append(line) {
  pending += line + '\n';
  if (pending.length >= BUFFER_LIMIT) flush();
  else if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flush);
  }
}

// The combined-format timestamp changes once a second: format it once a second.
let cachedSecond = -1;
let cachedTime = '';
function clfTime(now) {
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) {
    const d = new Date(second * 1000);
    const pad = (n) => String(n).padStart(2, '0');
    cachedTime = `${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
    cachedSecond = second;
  }
  return cachedTime;
}

const NEEDS_ESCAPE = /[\\"\x00-\x1f\x7f]/;

function quoted(value) {
  if (value === undefined || value === null || value === '') return '"-"';
  const text = String(value);
  if (!NEEDS_ESCAPE.test(text)) return `"${text}"`; // the usual case: one scan, no copy
  return `"${text.replace(/[\\"]/g, '\\$&').replace(/[\x00-\x1f\x7f]/g, escapeControl)}"`;
}

function escapeControl(ch) {
  return `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;
}

// The body's length in bytes, or null when nobody knows it (a script's chunked body).
function bodyBytes(req, res) {
  if (req.method === 'HEAD' || res.statusCode === 304 || res.statusCode === 204) return 0;
  const length = Number(res.getHeader('content-length') ?? NaN);
  if (Number.isInteger(length) && length >= 0) return length;
  return (req.svr && req.svr.bodyBytes) ?? null;
}

// A request header's value, or null when it is missing or empty.
function headerOrNull(value) {
  return value === undefined || value === '' ? null : value;
}

// An IPv4 client on a dual-stack socket shows as ::ffff:1.2.3.4; log it as 1.2.3.4.
function clientAddress(req) {
  return shownAddress(req.socket?.remoteAddress);
}

function shownAddress(address) {
  if (!address) return '-';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

function describe(req, res, startedAt, remote) {
  return {
    remote,
    user: (req.svr && req.svr.user) || req.authUser || '-',
    method: req.method,
    url: req.svr ? req.svr.originalUrl : req.url, // what was asked, not what a rewrite made of it
    protocol: `HTTP/${req.httpVersion}`,
    status: res.statusCode,
    bytes: bodyBytes(req, res),
    referer: headerOrNull(req.headers.referer),
    userAgent: headerOrNull(req.headers['user-agent']),
    seconds: (performance.now() - startedAt) / 1000,
    cache: req.svr && req.svr.cache, // the proxy cache's X-Cache status, for the rules that cache
  };
}

function combinedLine(entry, now) {
  return `${entry.remote} - ${entry.user} [${clfTime(now)}] ` +
    `${quoted(`${entry.method} ${entry.url} ${entry.protocol}`)} ${entry.status} ${entry.bytes ?? '-'} ` +
    `${quoted(entry.referer)} ${quoted(entry.userAgent)} ${entry.seconds.toFixed(3)}` +
    (entry.cache === undefined ? '' : ` ${entry.cache}`);
}

// One type per field: bytes a number or null, referer and userAgent a string or null.
function jsonLine(entry, now) {
  return JSON.stringify({ time: new Date(now).toISOString(), ...entry, seconds: Number(entry.seconds.toFixed(6)) });
}

// Returns a function to call at the start of every request, or null when logging is off.
// write(line): where lines go; stdout, batched, unless a caller (the in-process test harness) says otherwise.
function createAccessLog(config, { write = append } = {}) {
  if (!config.enableLogging) return null;
  const format = config.logFormat === 'json' ? jsonLine : combinedLine;
  return function logRequest(req, res) {
    const startedAt = performance.now(); // monotonic, as hrtime, without a BigInt per request
    // Read now: by 'close' an HTTP/2 stream (and a destroyed socket) no longer knows its peer.
    const remote = clientAddress(req);
    // The client address the pipeline resolved (behind a proxy: enableIPSpoofing, trustedProxies);
    // the peer for a request no pipeline saw.
    res.on('close', () => { // 'close' comes once; on() spares the once-wrapper and its removal
      if (req.svr?.internal) return; // the health and metrics paths (pipeline/health-metrics.js)
      const client = req.svr === undefined ? remote : shownAddress(req.svr.clientAddress);
      write(format(describe(req, res, startedAt, client), Date.now()));
    });
  };
}

module.exports = { createAccessLog, flush, useFile, reopen };
