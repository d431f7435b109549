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
// Forward-proxy mods: an absolute-form request goes to pipeline.proxyRequest and a CONNECT to
// pipeline.connect when a mod takes them, as process/worker.js routes them. Without such a mod a
// CONNECT is left to Node here (the connection closes): the worker's bare 501 needs startServer.
// The config goes through the same reading as a real start (process/primary.js readConfig: the
// mods' configValidators, the schema and its defaults, paths, the certificate; loadConfig alone
// when there are no mods and no HTTPS); a config a real start refuses rejects with its messages. Stage code that throws outside a request (a timer in a script)
// would take the test process down: keep such tests on startServer.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { makeTempDir, writeFiles, LineWatcher } = require('./helpers');
const { readConfig } = require('../../lib/process/primary');
const { loadConfig } = require('../../lib/config/load');
const { createPipeline } = require('../../lib/pipeline');
const { createAccessLog } = require('../../lib/access-log');
const { serverOptions, applyTimeouts } = require('../../lib/net/listeners');

function collectingLog(watcher) {
  const add = (level) => (message) => watcher.add(`${level} ${message}`);
  return { info: add('info'), warn: add('warn'), error: add('error') };
}

// The config as a worker gets it: written to dir/svr-config.json, then read back as a start
// reads it (mods' configValidators, schema defaults, paths resolved). Throws on errors.
// Without a modsDirectory, a start would read svr's own mods/ (no mod in a checkout) in a child
// process; the schema check alone gives the same config without that process.
function completeConfig(dir, config, { disableMods = false } = {}) {
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  const read = config.modsDirectory === undefined && !config.secure
    ? loadConfig(configFile)
    : readConfig({ configFile, disableMods });
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

function isAbsoluteForm(target) {
  return target !== '*' && !target.startsWith('/');
}

async function startPipeline({ config = {}, files = {}, mods = null, disableMods = false, env = {}, plainPortOfHttps = false } = {}) {
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
  let server;
  try {
    const raw = { wwwroot: 'web', workers: 1, ...config };
    const { config: complete, configFile } = completeConfig(dir, raw, { disableMods });
    server = http.createServer(serverOptions(complete));
    applyTimeouts(server, complete);
    // The port is known once listening; the config names it, as a started server's does.
    const port = await listen(server, config.port ?? 0);
    complete.port = port;
    fs.writeFileSync(configFile, JSON.stringify({ ...raw, port }, null, 2));
    const pipeline = withEnv(env, () => createPipeline(complete, { log: collectingLog(stderr), configFile, disableMods }));
    const logRequest = createAccessLog(complete, { write: (line) => stdout.add(line) });
    // What a worker's onRequest does for a plain HTTP listener, minus the socket bookkeeping.
    const handle = plainPortOfHttps ? pipeline.httpsRedirect : pipeline.handle;
    const proxyRequest = plainPortOfHttps ? null : pipeline.proxyRequest;
    server.on('request', (req, res) => {
      if (logRequest) logRequest(req, res);
      if (proxyRequest && isAbsoluteForm(req.url)) return proxyRequest(req, res);
      return handle(req, res);
    });
    if (pipeline.connect && !plainPortOfHttps) server.on('connect', pipeline.connect);
    // Every accepted socket, so that stop() also ends those a CONNECT or an upgrade took from the
    // HTTP parser (closeAllConnections does not see them, and close() would wait for them).
    const sockets = new Set();
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    return {
      url: `http://127.0.0.1:${port}`, port, root, dir, configFile, pipeline, config: complete,
      logs: stderr.lines,
      stdout: () => stdout.lines,
      stderr: () => stderr.lines,
      // since: a line count (e.g. site.stderr().length before the action) to ignore older lines
      waitForLog: (pattern, stream = 'stderr', since = 0, timeoutMs) =>
        (stream === 'stdout' ? stdout : stderr).waitFor(pattern, since, timeoutMs),
      stop: () => new Promise((resolve) => {
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
        server.close(() => {
          fs.rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
    };
  } catch (error) {
    if (server) server.close();
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

module.exports = { startPipeline, completeConfig };
