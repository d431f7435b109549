'use strict';
// In-process harness for stage behaviour: the worker's pipeline behind an HTTP server on a free
// loopback port, with a temporary config file and web root. Far cheaper than starting svr.js
// (no primary, no worker, no ajv compile per start); use helpers.js startServer where the process
// is the point (CLI, supervision, crash recycling, TLS sessions, signals, /proc of the server).
//
//   const site = await startPipeline({ config, files, mods, disableMods })
//
// It answers like startServer's object, so a test moves by changing one call:
//   site.url, site.port, site.root, site.dir, site.configFile, site.config (complete),
//   site.stdout() (access-log lines), site.stderr() (log lines, "LEVEL message"),
//   site.waitForLog(pattern, 'stdout' | 'stderr', since), site.stop()
// files: { 'path/under/web': content } ('../x' writes beside the web root);
// mods: { 'name.js': source } written into a mods directory the config points at.
// env: environment variables the pipeline reads when it is built (SVR_FILE_CACHE_SETTLE_MS), set
// only while it is built.
// plainPortOfHttps: serve what the plain port of an HTTPS site serves (the redirect stage list)
// instead of the site.
// A CONNECT enters the stage list with a response made for its socket, as process/worker.js
// does it (not with asWorker); absolute-form requests and the health path are stages.
// scrapeMetrics: what the metrics path answers (metrics.onSitePort), instead of the primary's totals.
// rateLimits: true to count `rateLimits` in this process, as --single-threaded does (a counter of
// its own, lib/process/rate-limits/); without it the rules are not applied.
// asWorker: listen as a worker does instead: lib/net/listeners.js createListeners builds the servers
// from the config (the plain one, or the plain port's HTTPS redirect; the HTTPS or HTTP/2 one with
// its TLS context, SNI, HSTS and HTTP/2 settings; PROXY protocol; the connection limit; silent
// connections; pipelining), each bound to 127.0.0.1 on a free port unless the config names one.
// site.url is the plain listener (when there is one), site.sport and site.httpsUrl the secure one.
// What lib/log writes while such a site runs (net/'s own lines, and the certificate check of the
// config reading) goes to site.stderr() as well, as "<time> LEVEL primary: message" lines, instead
// of the test's stderr: lib/log is one per process, so every asWorker site running sees them.
// Not there: what process/worker.js adds around the pipeline (draining, socket bookkeeping, the
// primary's metrics totals); keep such tests on startServer.
// The config goes through the same steps as a real start (process/start.js prepareStart: the
// mods' configValidators, the schema and its defaults, paths, the certificate, the pipeline's
// compilers; loadConfig alone when there are no mods and no HTTPS); a config a real start refuses
// rejects with its messages. The pipeline is prepared (pipeline.prepare()) as a worker's is.
// Stage code that throws outside a request (a timer in a script) would take the test process
// down: keep such tests on startServer.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { makeTempDir, writeFiles, LineWatcher } = require('./helpers');
const { prepareStart } = require('../../lib/process/start');
const { loadConfig } = require('../../lib/config/load');
const { createPipeline } = require('../../lib/pipeline');
const { createAccessLog } = require('../../lib/access-log');
const { serverOptions, applyTimeouts, createListeners } = require('../../lib/net/listeners');
const { handleUpgrade } = require('../../lib/net/upgrade');
const { createRateCounter } = require('../../lib/process/rate-limits/counter');
const { inProcessRateLimiter } = require('../../lib/process/rate-limits/ipc');

function collectingLog(watcher) {
  const add = (level) => (message) => watcher.add(`${level} ${message}`);
  return { info: add('info'), warn: add('warn'), error: add('error') };
}

// The config as a worker gets it: written to dir/svr-config.json, then read back as a start
// reads it (mods' configValidators, schema defaults, paths resolved). Throws on errors.
// Without a modsDirectory, a start would read svr's own mods/ (no mod in a checkout) in a child
// process; the schema check alone gives the same config without that process.
async function completeConfig(dir, config, { disableMods = false } = {}) {
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  const read = config.modsDirectory === undefined && !config.secure
    ? loadConfig(configFile)
    : await prepareStart({ configFile, disableMods });
  const { config: complete, errors } = read;
  if (errors.length) throw new Error(errors.join('\n'));
  return { config: complete, configFile };
}

function withEnv(env, build) {
  const saved = Object.keys(env).map((name) => [name, process.env[name]]);
  Object.assign(process.env, env);
  try {
    return build();
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server.address().port);
    });
  });
}

// lib/log's lines (its format: "<ISO time> LEVEL role: message") go to the stderr watchers of the
// asWorker sites running, while there are any; other stderr writes pass through.
const LOG_LINE = /^\d{4}-\d\d-\d\dT\S+ (info|warn|error) /;
const logWatchers = new Set();
let stderrWrite = null;

function captureLog(watcher) {
  if (logWatchers.size === 0) {
    stderrWrite = process.stderr.write;
    process.stderr.write = function write(chunk, ...rest) {
      const text = String(chunk);
      if (!LOG_LINE.test(text)) return stderrWrite.call(process.stderr, chunk, ...rest);
      for (const line of text.split('\n')) if (line !== '') for (const w of logWatchers) w.add(line);
      const callback = rest.find((arg) => typeof arg === 'function');
      if (callback) process.nextTick(callback);
      return true;
    };
  }
  logWatchers.add(watcher);
  return () => {
    logWatchers.delete(watcher);
    if (logWatchers.size === 0 && stderrWrite) {
      process.stderr.write = stderrWrite;
      stderrWrite = null;
    }
  };
}

// The worker's listeners for the config (asWorker). Binds each; the config gets the ports bound.
// raw: the config as the test gave it (without a port, a free one).
async function listenAsWorker(complete, raw, handlers) {
  const listeners = createListeners(complete, handlers);
  for (const listener of listeners) {
    const key = listener.scheme === 'https' ? 'sport' : 'port';
    complete[key] = await listen(listener.server, raw[key] ?? 0);
  }
  return listeners.map(({ server }) => server);
}

async function startPipeline({ config = {}, files = {}, mods = null, disableMods = false, env = {}, plainPortOfHttps = false, asWorker = false, scrapeMetrics, rateLimits = false } = {}) {
  const dir = makeTempDir('svr-pipeline-');
  const root = path.join(dir, 'web');
  fs.mkdirSync(root);
  writeFiles(root, files);
  if (mods) {
    writeFiles(path.join(dir, 'mods'), mods);
    config = { modsDirectory: 'mods', ...config };
  }
  const stdout = new LineWatcher();
  const stderr = new LineWatcher();
  const servers = [];
  // Every accepted socket, so that stop() also ends those a CONNECT or an upgrade took from the
  // HTTP parser (closeAllConnections does not see them, and close() would wait for them).
  const sockets = new Set();
  const releaseLog = asWorker ? captureLog(stderr) : () => {};
  const stop = () => new Promise((resolve) => {
    releaseLog();
    for (const socket of sockets) socket.destroy();
    let open = servers.length;
    const closed = () => {
      if (--open > 0) return;
      fs.rmSync(dir, { recursive: true, force: true });
      resolve();
    };
    if (open === 0) { open = 1; closed(); }
    for (const server of servers) server.close(closed);
  });
  try {
    const raw = { wwwroot: 'web', workers: 1, ...config };
    const { config: complete, configFile } = await completeConfig(dir, raw, { disableMods });
    // The ports are known once listening; the config names them, as a started server's does.
    // The pipeline is built after (the HTTPS redirect names sport); handlers reach it through `site`.
    let site = null;
    const answer = (handle) => (req, res) => {
      if (site.logRequest) site.logRequest(req, res);
      return site.pipeline[handle](req, res);
    };
    if (asWorker) {
      servers.push(...await listenAsWorker(complete, config, { site: answer('handle'), httpsRedirect: answer('httpsRedirect') }));
    } else {
      const server = http.createServer(serverOptions(complete));
      applyTimeouts(server, complete);
      servers.push(server);
      complete.port = await listen(server, config.port ?? 0);
      // What a worker's onRequest does for a plain HTTP listener, minus the socket bookkeeping.
      server.on('request', answer(plainPortOfHttps ? 'httpsRedirect' : 'handle'));
    }
    for (const server of servers) server.on('connection', (socket) => { sockets.add(socket); socket.once('close', () => sockets.delete(socket)); });
    const { port, sport } = complete;
    fs.writeFileSync(configFile, JSON.stringify({ ...raw, port, ...(asWorker && complete.secure ? { sport } : {}) }, null, 2));
    const log = collectingLog(stderr);
    const rateLimiter = rateLimits ? inProcessRateLimiter(createRateCounter(complete.rateLimitStore, log)) : null;
    const pipeline = withEnv(env, () => createPipeline(complete, { log, configFile, disableMods, scrapeMetrics, rateLimiter }));
    await pipeline.prepare();
    site = { pipeline, logRequest: createAccessLog(complete, { write: (line) => stdout.add(line) }) };
    if (!asWorker && !plainPortOfHttps) servers[0].on('connect', (req, socket, head) => handleUpgrade(req, socket, head, answer('handle')));
    return {
      url: `http://127.0.0.1:${port}`, port, root, dir, configFile, pipeline, config: complete,
      ...(asWorker && complete.secure ? { sport, httpsUrl: `https://localhost:${sport}` } : {}),
      logs: stderr.lines,
      stdout: () => stdout.lines,
      stderr: () => stderr.lines,
      // since: a line count (e.g. site.stderr().length before the action) to ignore older lines
      waitForLog: (pattern, stream = 'stderr', since = 0, timeoutMs) =>
        (stream === 'stdout' ? stdout : stderr).waitFor(pattern, since, timeoutMs),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

module.exports = { startPipeline, completeConfig };
