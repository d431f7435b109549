'use strict';
// One access-log line per request on stdout, in combined log format (plus the response
// time in seconds, as nginx's $request_time) or as JSON. A turn's lines are joined into one string
// (appending costs no copy) and, at the end of the turn, encoded into the batch buffer; the batch is
// written in one write syscall: at the end of the turn of the event loop, or, while turns bring a
// busy worker's handful of lines each, at the end of the first turn that does not (the worker has
// caught up), or once it is 64 KiB long or 100 ms old. flush() writes what is left synchronously,
// so a graceful stop (and the drain after an uncaught exception) loses nothing.
// Why the batch is a buffer outside the JavaScript heap: it waits across garbage collections, and
// every young-generation collection copied the waiting lines (several hundred under load) to keep
// them alive, which cost more than writing them. A turn's string dies young, which costs a
// collection nothing, and is encoded in one call, not one per line.
// What changes once a second (the timestamp) is formatted once a second.

const fs = require('node:fs');
const { switchLogFile } = require('./log-file');

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const BATCH_BYTES = 64 * 1024; // a full batch is written at once
// A turn's lines are encoded once they are this long: a UTF-16 code unit takes at most 3 bytes of
// UTF-8 (a surrogate pair, two units, takes 4), so they always fit an empty batch.
const TURN_CHARS = BATCH_BYTES / 4;
const BATCH_MS = 100; // a busy worker's lines wait at most this long (checked at the end of a turn)
const BUSY_TURN_LINES = 4; // a turn that brought this many lines is a busy worker's: its batch may wait

let turnLines = ''; // this turn's lines, joined: V8 keeps the pieces until they are encoded
const batch = Buffer.allocUnsafeSlow(BATCH_BYTES); // the lines of earlier turns not yet written
let batchUsed = 0; // bytes of batch in use
let pendingSince = 0; // Date.now() as the first of the lines not yet written came
let linesThisTurn = 0; // lines since the last end-of-turn check
let checkScheduled = false;
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
  encodeTurnLines();
  writeBatch();
}

function writeBatch() {
  if (batchUsed === 0) return;
  const data = batch.subarray(0, batchUsed);
  batchUsed = 0;
  writeOut(data);
}

// This turn's lines into the batch (written first when they might not fit); a single line longer
// than a batch (a long URL) is written on its own, after the batch.
function encodeTurnLines() {
  if (turnLines.length === 0) return;
  const room = turnLines.length * 3;
  if (batchUsed + room > BATCH_BYTES) writeBatch();
  if (room > BATCH_BYTES) writeOut(Buffer.from(turnLines));
  else batchUsed += batch.write(turnLines, batchUsed);
  turnLines = '';
}

// Writes data synchronously, except on a full non-blocking stdout (then a copy is queued: data
// may be the batch buffer, which the next lines overwrite).
function writeOut(data) {
  if (file) return file.write(data);
  while (data.length > 0) {
    try {
      data = data.subarray(fs.writeSync(1, data)); // a pipe may take only part of it
    } catch (error) {
      // A full non-blocking stdout (a journald socket, say): let the stream queue the rest.
      if (error.code === 'EAGAIN') process.stdout.write(Buffer.from(data));
      // Anything else (EPIPE: nobody reads stdout any more) loses the log, not the server.
      return;
    }
  }
}

function append(line) {
  if (batchUsed === 0 && turnLines.length === 0) pendingSince = Date.now();
  turnLines += line + '\n';
  linesThisTurn++;
  if (turnLines.length >= TURN_CHARS) encodeTurnLines();
  if (!checkScheduled) {
    checkScheduled = true;
    setImmediate(endOfTurn);
  }
}

// Why not always a write per turn: under load a worker answers a handful of requests a turn, and
// a write per turn cost them about 0.2 µs of CPU each (docs/performance.md). While every turn brings
// a busy worker's lines the batch waits; the check stays scheduled, and a scheduled setImmediate
// keeps the loop from blocking in its poll for input, so the first turn that brings fewer (the
// worker has caught up) writes the batch. A turn of one or a few lines (a worker that is not busy)
// writes at once, with no second check: waiting would save it no write.
function endOfTurn() {
  checkScheduled = false;
  const lines = linesThisTurn;
  linesThisTurn = 0;
  encodeTurnLines();
  if (batchUsed === 0) return;
  if (lines < BUSY_TURN_LINES || Date.now() - pendingSince >= BATCH_MS) {
    writeBatch();
    return;
  }
  checkScheduled = true;
  setImmediate(endOfTurn);
}

// The timestamps change once a second: their text is made once a second. The combined
// format's "26/Nov/2026:10:49:15 +0000", and the JSON format's ISO 8601 time up to the second,
// "2026-11-26T10:49:15.", to which each line adds its milliseconds and "Z".
let cachedSecond = -1;
let cachedClf = '';
let cachedIsoSecond = '';
function updateSecond(second) {
  const d = new Date(second * 1000);
  const date = `${pad2(d.getUTCDate())}`;
  const time = `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`;
  cachedClf = `${date}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${time} +0000`;
  cachedIsoSecond = `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${date}T${time}.`;
  cachedSecond = second;
}

function pad2(n) {
  return n < 10 ? `0${n}` : `${n}`;
}

function clfTime(now) {
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) updateSecond(second);
  return cachedClf;
}

// What new Date(now).toISOString() gives, without a Date per request.
function isoTime(now) {
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) updateSecond(second);
  const ms = now - second * 1000;
  return `${cachedIsoSecond}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
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

// A JSON string as JSON.stringify writes it; most values need no escape, and skip its call.
const NEEDS_JSON_ESCAPE = /[\\"\x00-\x1f\ud800-\udfff]/;
function jsonString(text) {
  return NEEDS_JSON_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

// The body's length in bytes, or null when nobody knows it (a script's chunked body): what the
// stage that answered counted or announced (req.svr.bodyBytes; a head written straight from an
// object keeps no Content-Length to read back), else the response's Content-Length.
function bodyBytes(req, res) {
  if (req.method === 'HEAD' || res.statusCode === 304 || res.statusCode === 204) return 0;
  const counted = req.svr === undefined ? undefined : req.svr.bodyBytes;
  if (counted !== undefined && counted !== null) return counted;
  const length = Number(res.getHeader('content-length') ?? NaN);
  return Number.isInteger(length) && length >= 0 ? length : null;
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

function userOf(req) {
  return (req.svr && req.svr.user) || req.authUser || '-';
}

// What was asked, not what a rewrite made of it.
function urlOf(req) {
  return req.svr ? req.svr.originalUrl : req.url;
}

// The method asked with, not the GET a gateway's local redirect made of a POST.
function methodOf(req) {
  return (req.svr && req.svr.originalMethod) || req.method;
}

// The proxy cache's X-Cache status, for the rules that cache (undefined otherwise).
function cacheOf(req) {
  return req.svr && req.svr.cache;
}

// "GET /path HTTP/1.1", quoted as quoted() would quote it, without joining it first to scan it.
function requestLine(req) {
  const method = methodOf(req);
  const url = urlOf(req);
  if (NEEDS_ESCAPE.test(method) || NEEDS_ESCAPE.test(url)) return quoted(`${method} ${url} HTTP/${req.httpVersion}`);
  return `"${method} ${url} HTTP/${req.httpVersion}"`;
}

// seconds to the millisecond, rounded, as toFixed(3) writes it (but for an exact half-millisecond,
// which this rounds up), from whole numbers: toFixed is a call into V8's runtime.
function millisecondsText(seconds) {
  const ms = Math.round(seconds * 1000);
  const fraction = ms % 1000;
  return `${(ms - fraction) / 1000}.${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}`;
}

function combinedLine(req, res, remote, seconds, now) {
  const headers = req.headers;
  const cache = cacheOf(req);
  return `${remote} - ${userOf(req)} [${clfTime(now)}] ` +
    `${requestLine(req)} ${res.statusCode} ${bodyBytes(req, res) ?? '-'} ` +
    `${quoted(headers.referer)} ${quoted(headers['user-agent'])} ${millisecondsText(seconds)}` +
    (cache === undefined ? '' : ` ${cache}`);
}

// The JSON object JSON.stringify made of { time, remote, user, method, url, protocol, status,
// bytes, referer, userAgent, seconds, cache }, written field by field. One type per field: bytes a
// number or null, referer and userAgent a string or null; cache left out unless the proxy cache
// set it.
function jsonLine(req, res, remote, seconds, now) {
  const headers = req.headers;
  const bytes = bodyBytes(req, res);
  const cache = cacheOf(req);
  return `{"time":"${isoTime(now)}","remote":${jsonString(remote)},"user":${jsonString(userOf(req))},` +
    `"method":${jsonString(methodOf(req))},"url":${jsonString(urlOf(req))},"protocol":${jsonString(`HTTP/${req.httpVersion}`)},` +
    `"status":${res.statusCode},"bytes":${JSON.stringify(bytes)},"referer":${jsonOrNull(headerOrNull(headers.referer))},` +
    `"userAgent":${jsonOrNull(headerOrNull(headers['user-agent']))},"seconds":${Number(seconds.toFixed(6))}` +
    `${cache === undefined ? '' : `,"cache":${typeof cache === 'string' ? jsonString(cache) : JSON.stringify(cache)}`}}`;
}

function jsonOrNull(text) {
  return text === null ? 'null' : jsonString(text);
}

// The access log's clock: seconds on the monotonic clock as a plain number. process.hrtime()'s
// pair costs less than process.uptime() (a plain binding call) and makes no BigInt; unlike the
// global `performance` it loads nothing (perf_hooks) into the worker. Destructuring the pair
// made Node 24 allocate 0.4 KB more per request (test/process/script-request-allocation.test.js).
function clock() {
  const time = process.hrtime(); // [seconds, nanoseconds]; read by index: destructuring would iterate
  return time[0] + time[1] / 1e9;
}

// The line for one finished request: (req, res, startedAt, remote, now), where startedAt is the
// clock() of its start, remote the peer's address read then (by 'close' an HTTP/2 stream, and a
// destroyed socket, no longer knows its peer) and now the Date.now() of its end, when the caller
// has it. null when logging is off.
// write(line): where lines go; stdout, batched, unless a caller (the in-process test harness) says otherwise.
function createLineWriter(config, { write = append } = {}) {
  if (!config.enableLogging) return null;
  const format = config.logFormat === 'json' ? jsonLine : combinedLine;
  return function logLine(req, res, startedAt, remote, now = Date.now()) {
    if (req.svr?.internal) return; // the health and metrics paths (pipeline/health-metrics.js)
    // The client address the pipeline resolved (behind a proxy: enableIPSpoofing, trustedProxies);
    // the peer for a request no pipeline saw.
    const client = req.svr === undefined ? remote : shownAddress(req.svr.clientAddress);
    write(format(req, res, client, clock() - startedAt, now));
  };
}

// The same as one function to call at the start of every request, which logs the request when its
// response closes; null when logging is off. (The worker calls createLineWriter itself, from the
// one 'close' listener it has on every response anyway.)
function createAccessLog(config, options) {
  const logLine = createLineWriter(config, options);
  if (logLine === null) return null;
  return function logRequest(req, res) {
    const startedAt = clock();
    const remote = clientAddress(req);
    res.on('close', () => logLine(req, res, startedAt, remote)); // 'close' comes once
  };
}

module.exports = { createAccessLog, createLineWriter, clock, peerAddress: clientAddress, bodyBytes, flush, useFile, reopen, combinedLine, jsonLine };
