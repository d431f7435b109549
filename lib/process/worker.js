'use strict';
// A worker: builds the pipeline and the listeners from the validated config it is given,
// serves, and on request drains — stops accepting, lets in-flight requests finish, closes
// keep-alive connections as they fall idle, then exits 0.

const net = require('node:net');
const log = require('../log');
const accessLog = require('../access-log');
const { whenClosed } = require('../http/response');
const { createPipeline } = require('../pipeline');
const { createListeners } = require('../net/listeners');
const { handleUpgrade } = require('../net/upgrade');
const { throttledErrorLog } = require('../net/connection-limit');
const { acceptedSocket } = require('../net/accepted-socket');
const { keepAliveSweeper, sweepEveryMs } = require('../net/keep-alive');
const { WorkerMetrics, ipcSink } = require('./worker-metrics');
const { installCrashHandlers, observeUserCode } = require('../request-context');
const { startHeartbeat } = require('./watchdog');
const { watchProgress, SAMPLE_MS } = require('./drain-progress');
const { workerSockets } = require('./held-sockets');
const { WORKER, createDispatcher, createAsker } = require('./messages');
const { acmeSettings } = require('../acme/settings');
const { acmeDirectory } = require('../acme/store');
const { ChallengeAnswers } = require('../acme/challenges');
const { ipcRateLimiter } = require('./rate-limits/ipc');
const { ipcCacheIndex, cachesAnything } = require('./proxy-cache-index');

// Errors on listen that no restart can fix: the primary stops with the message instead of looping.
const FATAL_LISTEN_ERRORS = {
  EADDRINUSE: (port) => `port ${port} is already in use`,
  EACCES: (port) => `permission denied to listen on port ${port} (ports below 1024 need root or CAP_NET_BIND_SERVICE)`,
  EADDRNOTAVAIL: (port) => `the address for port ${port} is not available on this machine`,
};

const DRAIN_SWEEP_MS = 50;
const RECYCLE_IDLE_GRACE_MS = 1000; // as a reload: closing an idle socket races a request on its way
// A connection accepted just before a drain has not sent its request yet, but it is on its way:
// closing the connection then would drop it (a restart would reset a client the kernel already
// accepted). Such a connection gets this long from its accept, whatever the drain's idle grace.
const FIRST_REQUEST_GRACE_MS = 1000;
const RECYCLE_WAIT_MS = 35000; // longer than the primary's wait for a replacement to be ready

class Worker {
  constructor(config, configFile, hooks, options = {}) {
    this.config = config;
    this.hooks = hooks; // { ready(addresses), fatal(code, message), recycle?(message), rateLimiter?, cacheIndex? }
    this.disableMods = options.disableMods === true;
    this.exitCode = 0;
    this.sockets = new Map(); // socket -> { active, idleSince, h2, used, readAtSweep, heardAt }
    this.draining = false;
    this.idleGraceMs = 0; // the drain's (drain())
    this.served = 0; // requests given to this worker; the primary's crash backoff reads it
    this.toShed = 0; // connections the primary asked this worker to close (process/rebalance.js)
    this.shedUntil = 0;
    // Tells the heartbeat a connection came or went (process/watchdog.js: the balancing's early beat).
    this.connectionsChanged = () => {};
    // A closed socket's 'close' listener (this: the socket), one function for them all: a closure
    // per connection cost a connection-per-request client (ab, HTTP/1.0) more than it needs.
    const worker = this;
    this.untrack = function untrack() {
      worker.sockets.delete(this);
      worker.connectionsChanged();
    };
    this.configFile = configFile;
    // hooks.metricsSink: where the request counts go (the primary), when metrics are on.
    this.metrics = hooks.metricsSink ? new WorkerMetrics(hooks.metricsSink, {
      connections: () => this.sockets.size,
      upstreams: () => (this.pipeline && this.pipeline.proxy ? this.pipeline.proxy.upstreamHealth() : []),
    }) : null;
    this.pipeline = null;
    this.listeners = [];
    // ACME's challenge answers (the primary orders; this worker answers the CA).
    this.acmeAnswers = acmeSettings(config) ? new ChallengeAnswers(acmeDirectory(config)) : null;
  }

  // A worker's start: build the pipeline and await what it prepares, then listen. A config it
  // cannot serve is fatal (code ECONFIG unless the error says otherwise: EBADWWWROOT).
  async start() {
    try {
      await this.build(this.config);
      this.listeners = createListeners(this.config, {
        site: (req, res) => this.onRequest(req, res, this.pipeline.handle),
        httpsRedirect: (req, res) => this.onRequest(req, res, this.pipeline.httpsRedirect),
        connect: (req, socket, head) => this.onConnect(req, socket, head),
        acmeAnswers: this.acmeAnswers,
      });
    } catch (error) {
      this.hooks.fatal(error.code || 'ECONFIG', error.message);
      return;
    }
    if (this.draining) return; // told to stop while it was preparing
    await this.listen();
  }

  // The primary's ACME messages: a challenge to answer or to forget, a new certificate to serve.
  // Returns the answer the primary waits for.
  onAcmeMessage(message) {
    if (message.type === 'acme-challenge' && this.acmeAnswers) {
      if (message.action === 'add') this.acmeAnswers.add(message.record);
      else this.acmeAnswers.remove(message.record);
      return { ok: true };
    }
    if (message.type === 'acme-certificate') {
      try {
        for (const listener of this.listeners) if (listener.reload) listener.reload(this.config);
        return { ok: true };
      } catch (error) {
        log.error(`cannot load the new ACME certificate, still serving the previous one: ${error.message}`);
        return { ok: false, message: error.message };
      }
    }
    return { ok: false, message: `unknown message ${message.type}` };
  }

  // The per-config parts, built once; a single-threaded reload builds them again (the old ones
  // serve until the new ones are ready). The pipeline loads the mods and serverSideScript.js, so
  // a mod that cannot load fails the start (or the reload) with its own message. The working
  // directory is the web root, as SVR.JS documents for scripts and mods.
  async build(config) {
    enterWebRoot(config.wwwroot);
    const pipeline = createPipeline(config, {
      log,
      configFile: this.configFile,
      disableMods: this.disableMods,
      isDraining: () => this.draining,
      scrapeMetrics: this.metrics ? () => this.metrics.scrape() : null,
      acmeAnswers: this.acmeAnswers,
      rateLimiter: this.hooks.rateLimiter,
      cacheIndex: this.hooks.cacheIndex,
    });
    try {
      await pipeline.prepare();
    } catch (error) {
      pipeline.close();
      throw error;
    }
    if (this.pipeline) this.pipeline.close();
    this.pipeline = pipeline;
    this.logLine = accessLog.createLineWriter(config);
  }

  // CONNECT, on any listener, enters the site's stage list (pipeline/connect.js decides): over
  // HTTP/2 the server emits 'connect' with (request, response); an HTTP/1 one gets a response
  // made for its socket, as an Upgrade does.
  onConnect(req, socket, head) {
    if (typeof socket.writeHead === 'function') return this.onRequest(req, socket, this.pipeline.handle);
    return handleUpgrade(req, socket, head, (request, res) => this.onRequest(request, res, this.pipeline.handle));
  }

  // handle: the stage list that answers the request (the site's, or the plain port's HTTPS
  // redirect). Here: the access log, metrics, socket bookkeeping, Connection: close while draining.
  onRequest(req, res, handle) {
    this.served++;
    if (this.metrics) this.metrics.observe(req, res);
    // Sockets are tracked as accepted; over TLS req.socket is the TLS socket wrapping it.
    const state = this.sockets.get(acceptedSocket(req.socket));
    if (state) {
      state.active++;
      state.used = true;
      if (req.httpVersionMajor >= 2) state.h2 = true;
      // Balancing sheds only a connection with no other request on it (pipelined ones would be cut).
      else if (this.toShed > 0 && state.active === 1 && this.mayShed()) res.setHeader('Connection', 'close');
    }
    this.watchClose(req, res, state);
    // HTTP/2 has no Connection header: its sessions are sent a GOAWAY when the drain starts.
    if (this.draining && !res.headersSent && req.httpVersionMajor < 2) res.setHeader('Connection', 'close');
    handle(req, res);
  }

  // One call as each response closes (http/response.js's whenClosed), for both what ends with it:
  // the socket's count of requests in flight (state: undefined for a socket not tracked) and the
  // access log's line.
  watchClose(req, res, state) {
    const logLine = this.logLine;
    if (state === undefined && logLine === null) return;
    const startedAt = logLine === null ? 0 : accessLog.clock();
    const remote = logLine === null ? undefined : accessLog.peerAddress(req);
    whenClosed(res, () => {
      const now = Date.now();
      if (state !== undefined) {
        state.active--;
        state.idleSince = now;
      }
      if (logLine !== null) logLine(req, res, startedAt, remote, now);
    });
  }

  // The HTTP/1 connections that carried a request within the last windowMs (the primary's
  // balancing; an HTTP/2 session cannot be asked to reconnect with a Connection header).
  busyConnections(windowMs) {
    const since = Date.now() - windowMs;
    let busy = 0;
    for (const state of this.sockets.values()) if (!state.h2 && (state.active > 0 || state.idleSince >= since)) busy++;
    return busy;
  }

  // The primary's balancing: close this many busy keep-alive connections at their next request,
  // within forMs (after that the primary has newer counts).
  shedConnections(count, forMs) {
    this.toShed = Number.isInteger(count) && count > 0 ? count : 0;
    this.shedUntil = Date.now() + (forMs > 0 ? forMs : 0);
  }

  mayShed() {
    if (Date.now() > this.shedUntil) this.toShed = 0;
    if (this.toShed === 0) return false;
    this.toShed--;
    return true;
  }

  track(socket) {
    this.sockets.set(socket, { active: 0, idleSince: Date.now(), h2: false, used: false, readAtSweep: 0, heardAt: 0 });
    this.connectionsChanged();
    socket.on('close', this.untrack);
  }

  async listen() {
    await Promise.all(this.listeners.map((listener) => this.listenOne(listener)));
    this.sweepKeepAlive();
    this.hooks.ready(this.listeners.map(({ scheme, port, server }) => ({ scheme, port, address: server.address() })));
  }

  // Idle HTTP/1 keep-alive connections are closed here, not by a timer per response (net/keep-alive.js).
  sweepKeepAlive() {
    const keepAliveMs = this.config.keepAliveTimeout;
    if (!(keepAliveMs > 0)) return; // 0: kept open, as Node does
    const sweep = keepAliveSweeper(this.sockets, keepAliveMs);
    setInterval(() => sweep(Date.now()), sweepEveryMs(keepAliveMs)).unref();
  }

  listenOne(listener) {
    const { server, port } = listener;
    server.on('connection', (socket) => this.track(socket));
    return new Promise((resolve) => {
      const onListenError = (error) => {
        const describe = FATAL_LISTEN_ERRORS[error.code];
        this.hooks.fatal(error.code, describe ? describe(port) : `cannot listen on port ${port}: ${error.message}`);
      };
      server.once('error', onListenError);
      // In a cluster the primary may hold this address's socket (held-sockets.js): listen on it.
      const held = this.hooks.heldSocket ? this.hooks.heldSocket(listener.listen) : null;
      server.listen(held || listener.listen || { port }, () => {
        const address = server.address();
        listener.port = typeof address === 'string' ? address : address.port; // a Unix socket: its path
        // From now on an error is one failed accept (EMFILE, say): log it and keep serving.
        server.off('error', onListenError);
        server.on('error', throttledErrorLog(log, `port ${listener.port}`));
        if (!held && this.hooks.shareSocket) this.hooks.shareSocket(listener.listen, server);
        resolve();
      });
    });
  }

  // idleGraceMs: how long a keep-alive connection may sit idle before it is closed: 0 on a stop,
  // a second on a reload or recycle, where busy clients get "Connection: close" on their next
  // response instead, which is race-free; closing an idle socket races a request already on its
  // way. So on a reload an HTTP/1 connection that was told "Keep-Alive: timeout=N" is left to the
  // keep-alive sweep, which closes it N s and a second after its last answer, as without a reload:
  // a client that honours the hint (Node's http.Agent closes at N - 1 s) never reuses a connection
  // as it closes.
  // transferTimeoutMs (reloads and recycles): responses still moving at timeoutMs may go on
  // until then; the rest are cut at timeoutMs.
  // delayMs (health.drainDelay, on stop only): keep accepting and serving that long first, with
  // the health path answering 503, so a load balancer takes this server out before it stops
  // accepting connections.
  // A stop while a reload drains this worker: its idle connections go at once, as on any stop.
  drain(idleGraceMs, timeoutMs, { transferTimeoutMs = timeoutMs, delayMs = 0 } = {}) {
    if (this.draining) {
      if (idleGraceMs < this.idleGraceMs) {
        this.idleGraceMs = idleGraceMs;
        if (this.onDrained) this.closeIdle();
      }
      return;
    }
    this.draining = true;
    this.idleGraceMs = idleGraceMs;
    if (delayMs > 0) setTimeout(() => this.stopAccepting(timeoutMs, transferTimeoutMs), delayMs);
    else this.stopAccepting(timeoutMs, transferTimeoutMs);
  }

  stopAccepting(timeoutMs, transferTimeoutMs) {
    // net.Server#close stops accepting; http.Server#close would also drop idle keep-alive
    // sockets at once (Node >= 19), which is exactly the race described above.
    for (const { server, drain } of this.listeners) {
      net.Server.prototype.close.call(server);
      if (drain) drain();
    }
    const sweep = setInterval(() => this.closeIdle(), DRAIN_SWEEP_MS);
    const progress = watchProgress(this.sockets);
    const startedAt = Date.now();
    setTimeout(() => this.forceUnlessMoving(progress, startedAt, transferTimeoutMs), timeoutMs).unref();
    this.onDrained = () => { clearInterval(sweep); this.exit(); };
    // In a cluster the primary may already have handed us a connection that is still in the
    // IPC pipe; exiting before it arrives would leave that client hanging. So exit only once
    // the primary confirms nothing more is on its way (immediately when single-threaded).
    Promise.resolve(this.hooks.stoppedAccepting && this.hooks.stoppedAccepting()).then(() => {
      this.mayExit = true;
      this.closeIdle();
    });
    this.closeIdle();
  }

  // At shutdownTimeout: exit, unless responses are still moving (and transferTimeoutMs has not
  // passed): then cut the others and look again every second.
  forceUnlessMoving(progress, startedAt, transferTimeoutMs) {
    const elapsed = Date.now() - startedAt;
    const moving = elapsed < transferTimeoutMs ? progress.moving() : new Set();
    const busy = [...this.sockets.values()].filter((state) => state.active > 0).length;
    // Nothing in flight: the connections left are idle keep-alive ones (a reload keeps them for
    // their announced timeout, which may outlast shutdownTimeout); closing them cuts nothing.
    if (busy === 0) return this.exit();
    if (moving.size === 0) return this.exit(`forced after ${elapsed} ms with ${this.sockets.size} connection(s) open`);
    for (const socket of this.sockets.keys()) if (!moving.has(socket)) socket.destroy();
    if (!this.waitingForTransfers) log.info(`drain: ${moving.size} response(s) still moving after ${elapsed} ms; waiting for them (up to ${transferTimeoutMs} ms)`);
    this.waitingForTransfers = true;
    setTimeout(() => this.forceUnlessMoving(progress, startedAt, transferTimeoutMs), SAMPLE_MS).unref();
    return undefined;
  }

  closeIdle() {
    const now = Date.now();
    const idleGraceMs = this.idleGraceMs;
    // On a reload, an HTTP/1 connection told a keep-alive timeout is left to the keep-alive sweep
    // (sweepKeepAlive), which goes on during the drain and closes it as it would without one.
    const sweepKeeps = idleGraceMs > 0 && this.config.keepAliveTimeout > 0;
    for (const [socket, state] of this.sockets) {
      if (state.active > 0) continue;
      if (state.used && !state.h2 && sweepKeeps) continue;
      const graceMs = state.used ? idleGraceMs : Math.max(idleGraceMs, FIRST_REQUEST_GRACE_MS);
      if (now - state.idleSince >= graceMs) socket.destroy();
    }
    if (this.sockets.size === 0 && this.mayExit && this.onDrained) this.onDrained();
  }

  exit(reason) {
    if (reason) log.warn(`drain ${reason}`);
    accessLog.flush();
    const exit = () => process.exit(this.exitCode);
    if (!this.metrics) return exit();
    setTimeout(exit, 500).unref(); // the last report is worth waiting for, not forever
    return this.metrics.flush(exit);
  }

  // After an uncaught exception: this process may be in a broken state, so it goes, but without
  // an outage: in a cluster it keeps accepting until the primary has a
  // replacement listening and sends 'drain'; then in-flight requests finish and it exits 1.
  // Single-threaded there is no replacement: it drains at once.
  recycle(error) {
    if (this.draining || this.recycling) return;
    this.recycling = true;
    const reason = error instanceof Error ? error.message : String(error);
    this.exitCode = 1;
    if (this.hooks.recycle) {
      log.warn('uncaught exception: this worker serves until its replacement listens, then finishes its in-flight requests and exits');
      this.hooks.recycle(reason, this.served);
      // No drain from the primary (gone, or no replacement could start): drain anyway.
      setTimeout(() => this.drain(RECYCLE_IDLE_GRACE_MS, this.config.shutdownTimeout, { transferTimeoutMs: this.config.reloadTransferTimeout }), RECYCLE_WAIT_MS).unref();
      return;
    }
    log.warn('uncaught exception: this worker stops accepting, finishes its in-flight requests and exits');
    this.drain(RECYCLE_IDLE_GRACE_MS, this.config.shutdownTimeout);
  }
}

function enterWebRoot(wwwroot) {
  try {
    process.chdir(wwwroot);
  } catch (error) {
    log.warn(`cannot make the web root ${wwwroot} the working directory: ${error.code || error.message}`);
  }
}

// In a cluster worker: wait for the config from the primary, then serve.
function runClusterWorker() {
  let worker = null;
  let confirmNoMoreConnections = null;
  const stoppedAccepting = () => new Promise((resolve) => {
    if (!process.connected) return resolve();
    confirmNoMoreConnections = resolve;
    process.send({ type: 'stopped-accepting' });
  });
  const sockets = workerSockets(); // the listening sockets the primary holds (held-sockets.js)
  const asker = createAsker((message) => process.send(message), { connected: () => process.connected });
  let metricsSink = null;
  let cacheIndex = null;
  const send = (message) => { if (process.connected) process.send(message); };
  // What this worker does with each message the primary sends (the table: process/messages.js).
  const dispatch = createDispatcher(WORKER, {
    'held-socket': (message, handle) => sockets.take(message, handle), // kept until the config names its address
    config: (message) => {
      if (worker) return;
      metricsSink = message.config.metrics ? ipcSink(asker.ask) : null;
      cacheIndex = cachesAnything(message.config) ? ipcCacheIndex({ ask: asker.ask, send }) : null;
      worker = startWorker(message.config, message.configFile, {
        ready: (listeners) => process.send({ type: 'ready', listeners }),
        fatal: (code, text) => process.send({ type: 'fatal', code, message: text }, () => process.exit(1)),
        recycle: (text, served) => { if (process.connected) process.send({ type: 'recycle', message: text, served }); },
        stoppedAccepting,
        heldSocket: sockets.heldSocket,
        shareSocket: message.holdSockets ? sockets.shareSocket : undefined,
        metricsSink,
        rateLimiter: message.config.rateLimits.length > 0 ? ipcRateLimiter(asker.ask, log) : null,
        cacheIndex,
      }, { disableMods: message.disableMods });
      if (worker) {
        const send = (beat) => { if (process.connected) process.send(beat); };
        const heartbeat = startHeartbeat({ stallTimeoutMs: message.config.workerStallTimeout, send, served: () => worker.served, busyConnections: (windowMs) => worker.busyConnections(windowMs) });
        observeUserCode(heartbeat.noteUserCode);
        if (message.config.balanceConnections !== false) worker.connectionsChanged = heartbeat.connectionsChanged;
      }
    },
    'acme-challenge': (message) => answerAcme(worker, message),
    'acme-certificate': (message) => answerAcme(worker, message),
    'shed-connections': (message) => worker?.shedConnections(message.count, message.forMs),
    'reopen-logs': () => reopenLogs(),
    drain: (message) => worker?.drain(message.idleGraceMs, message.timeoutMs, { transferTimeoutMs: message.transferTimeoutMs, delayMs: message.delayMs }),
    'no-more-connections': () => { if (confirmNoMoreConnections) confirmNoMoreConnections(); },
    'metrics-flush': () => metricsSink?.onFlushRequest?.(),
    answer: (message) => asker.onAnswer(message),
    'cache-forget': (message) => cacheIndex?.forgetMessage(message),
  }, log);
  process.on('message', dispatch);
  // The primary is gone (killed with -9, say): nobody supervises this worker any more. A worker
  // stuck in user code never gets this event: the primary's reaper (orphan-reaper.js) kills it.
  process.on('disconnect', () => {
    if (confirmNoMoreConnections) confirmNoMoreConnections(); // no primary, no more connections
    if (worker) worker.drain(0, 1000); else process.exit(0);
  });
  // A terminal's Ctrl-C signals the whole process group (systemd, with KillMode=mixed, signals only
  // the primary): drain as the primary would ask. A terminal hang-up must not kill workers;
  // reloads are the primary's.
  const drainNow = () => { if (worker) worker.drain(0, worker.config.shutdownTimeout, { delayMs: drainDelay(worker.config) }); else process.exit(0); };
  process.on('SIGTERM', drainNow);
  process.on('SIGINT', drainNow);
  process.on('SIGHUP', () => {});
  installCrashHandlers({ log, onCrash: (error) => (worker ? worker.recycle(error) : process.exit(1)) });
}

// The primary's ACME messages: done, with the outcome, is what it waits for.
function answerAcme(worker, message) {
  if (!worker) return;
  const outcome = worker.onAcmeMessage(message);
  if (process.connected) process.send({ type: 'acme-done', id: message.id, ok: outcome.ok, message: outcome.message || null });
}

// How long a stopping server keeps serving with its health path at 503 (health.drainDelay).
function drainDelay(config) {
  return (config.health && config.health.drainDelay) || 0;
}

function reopenLogs() {
  try {
    accessLog.reopen();
    log.reopen();
  } catch (error) {
    log.error(`cannot reopen a log file: ${error.message}`);
  }
}

// The worker at once (it drains or recycles even while starting); its start goes on in the
// background and ends in hooks.ready or hooks.fatal.
function startWorker(config, configFile, hooks, options) {
  let worker;
  try {
    accessLog.useFile(config.accessLog);
    log.useFile(config.errorLog);
    worker = new Worker(config, configFile, hooks, options);
  } catch (error) {
    hooks.fatal(error.code || 'ECONFIG', error.message);
    return null;
  }
  worker.start().catch((error) => hooks.fatal(error.code, error.message));
  return worker;
}

module.exports = { runClusterWorker, startWorker, drainDelay };
