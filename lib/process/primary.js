'use strict';
// The primary never serves. It runs the start's steps (start.js), forks the workers and
// supervises them: replaces the ones that die (with a growing delay when they keep dying young),
// rolls new workers in on SIGHUP one at a time, and drains everything on SIGTERM/SIGINT.

const cluster = require('node:cluster');
const log = require('../log');
const { workerCount } = require('../config/load');
const { workerExecArgv } = require('./worker-exec-argv');
const { prepareStart } = require('./start');
const { describeListenAddress, removeStaleSockets } = require('../config/listen-address');
const { version } = require('../../package.json');
const { defaultDirectoriesNote } = require('../product');
const { startRenewalTimer } = require('../net/certificate');
const { Watchdog, beatInterval } = require('./watchdog');
const { Rebalancer, DECIDE_DELAY_MS } = require('./rebalance');
const { createPrimaryMetrics } = require('./metrics');
const { EXIT_CONFIG, startFailureStatus } = require('./exit-status');
const { takeNotifySocket, notifyReady, notifyStatus } = require('./notify');
const { serverSocketPath, startControlServer } = require('./control');
const { HeldSockets, configuredKeys } = require('./held-sockets');
const { takeStoredSockets, storeSockets, forgetSockets } = require('./fd-store');
const { PRIMARY, createDispatcher, answerQuestion } = require('./messages');
const { createRateCounter } = require('./rate-limits/counter');
const { answerRateLimits } = require('./rate-limits/ipc');
const { primaryCacheIndex, cachesAnything } = require('./proxy-cache-index');
const { startAcme, acmeDone } = require('./acme');
const { startOrphanReaper } = require('./orphan-reaper');

const BACKOFF_BASE_MS = 100;
const BACKOFF_CAP_MS = 15000;
const STABLE_UPTIME_MS = 10000; // a worker that lived this long did not die of a crash loop
const READY_TIMEOUT_MS = 30000;
const RELOAD_IDLE_GRACE_MS = 1000;
const STOPPED_ACCEPTING_WAIT_MS = 5000; // a retired worker's answer to its drain, at most

class Supervisor {
  constructor(options) {
    this.options = options; // { configFile, port, workers, disableMods, controlSocket }
    this.pool = new Set(); // workers that serve (or are starting to), not the retiring ones
    this.alive = new Set(); // every worker process not yet exited, retiring ones included
    this.earlyDeaths = 0;
    this.stopping = false;
    this.reloading = false;
    this.reloadQueued = false;
    this.reloadWaiters = []; // callers of reload() waiting for the next reload's outcome
    this.started = false;
    this.heldSockets = new HeldSockets({ log, wantedKeys: () => configuredKeys(this.config) });
    this.watchdog = new Watchdog({
      stallTimeoutMs: () => this.config?.workerStallTimeout ?? 0,
      onStall: (worker, description) => {
        worker.svr.stalled = true;
        log.error(`worker ${worker.process.pid} stalled: ${description}; killing it and starting a replacement`);
      },
      onHeartbeat: (worker, served, busy) => {
        worker.svr.served = served;
        this.balance(worker, busy);
      },
    });
    this.rateCounter = null; // the host's rate-limit counter (rate-limits/counter.js), made when a config has rateLimits
    this.cacheIndex = null; // the proxy cache's index (proxy-cache-index.js), when a rule caches
    this.rebalancer = new Rebalancer({ intervalMs: () => beatInterval(this.config?.workerStallTimeout ?? 0) });
    this.balanceTimer = null; // the decision pending after a heartbeat (balance)
    this.dispatch = createDispatcher(PRIMARY, this.messageHandlers(), log);
  }

  // What the primary does with each message a worker sends (the table: process/messages.js).
  messageHandlers() {
    return {
      'listening-socket': (message, handle) => this.heldSockets.keep(message, handle),
      ready: (message, handle, worker) => worker.svr.starting?.ready(message),
      fatal: (message, handle, worker) => worker.svr.starting?.fatal(message),
      recycle: (message, handle, worker) => this.onRecycle(worker, message),
      // The cluster's own "close" message travels before this one on the same ordered channel,
      // so by now no new connection will be handed to this worker: it may exit once idle.
      'stopped-accepting': (message, handle, worker) => {
        if (worker.isConnected()) worker.send({ type: 'no-more-connections' });
        worker.svr.stoppedAccepting?.();
      },
      heartbeat: (message, handle, worker) => this.watchdog.beat(worker, message),
      metrics: (message, handle, worker) => this.metrics?.ingest(worker, message.report),
      ask: (message, handle, worker) => answerQuestion(worker, message, this.answerers()),
      'cache-stored': (message) => this.cacheIndex?.stored(message.file, message.bytes),
      'cache-unlock': (message, handle, worker) => this.cacheIndex?.unlock(worker, message.folder),
      'cache-forgotten': (message, handle, worker) => this.cacheIndex?.forgotten(worker, message.id),
      'acme-done': (message) => acmeDone(message),
    };
  }

  // The questions a worker may ask (process/messages.js QUESTIONS), answered here.
  answerers() {
    const answerers = {
      'rate-limit': (takes) => answerRateLimits(takes, this.rateCounterFor(this.config), this.pool.size),
    };
    if (this.metrics) answerers['metrics-text'] = () => this.metrics.render();
    if (this.cacheIndex) {
      answerers['cache-lock'] = (folder, worker) => this.cacheIndex.lock(worker, folder);
      answerers['cache-purged'] = (folder) => this.cacheIndex.purged(folder);
    }
    return answerers;
  }

  // The start's steps (start.js), awaited before any worker forks: at start and at every reload.
  async runStartSteps() {
    const { config, errors, problem, warnings, infos } = await prepareStart(this.options);
    for (const info of infos) log.info(info);
    for (const warning of warnings) log.warn(warning);
    return { config, errors, problem };
  }

  async start() {
    this.listenForSignals(); // before the first fork: a SIGHUP must never kill a starting server
    takeNotifySocket();
    const { config, errors, problem } = await this.runStartSteps();
    if (errors.length > 0) this.exitWithErrors(problem || 'the config is invalid', errors, EXIT_CONFIG);
    try {
      log.useFile(config.errorLog);
    } catch (error) {
      this.exitWithErrors('cannot open the error log', [`errorLog: ${error.message}`], EXIT_CONFIG);
    }
    this.config = config;
    const directories = defaultDirectoriesNote(config, this.options.configFile);
    if (directories) log.info(directories);
    chooseSchedulingPolicy(config);
    const stored = takeStoredSockets(); // a restart under systemd: the previous primary's sockets
    for (const problem of stored.problems) log.warn(problem);
    await forgetSockets([...this.heldSockets.adopt(stored.sockets), ...stored.unusable], log); // before a worker binds their ports
    removeStaleSockets(config, log);
    // Metrics (null when off): summed here from the workers' reports; set at start, a reload keeps them.
    this.metrics = createPrimaryMetrics(config, {
      pool: () => this.pool,
      rateLimits: () => this.rateCounter && this.rateCounter.status(),
      proxyCache: () => this.cacheIndex && this.cacheIndex.status(),
      certificates: () => (this.acme ? [this.acme.status()] : []),
    });
    if (hasRateLimits(config)) this.rateCounterFor(config); // Redis connects before the first request
    this.cacheIndexFor(config);
    this.reaper = startOrphanReaper(log); // before the first fork: it learns of every worker
    const count = workerCount(config);
    let listeners;
    try {
      const ready = await Promise.all(Array.from({ length: count }, () => this.whenReady(this.fork())));
      listeners = ready[0];
    } catch (error) {
      if (this.stopping) return;
      this.exitWithErrors('cannot start', [error.message], startFailureStatus(error.code));
    }
    await this.openControlSocket();
    this.started = true;
    const ready = banner(listeners, `${count} worker${count === 1 ? '' : 's'}, primary pid ${process.pid}`);
    log.info(ready);
    await storeSockets(this.heldSockets.handles, log); // before READY: a restart may follow at once
    await notifyReady(ready, log);
    startRenewalTimer(() => this.config, () => this.reload('certificate renewal'));
    this.restartAcme();
    if (this.reloadQueued) this.runReload('SIGHUP received while starting');
  }

  // ACME orders once the workers listen: they answer the CA's challenges. A reload starts it
  // again with the new config (the workers it starts already read the certificate on disk).
  // The metrics' counters carry over (a Prometheus counter never goes down while the process lives).
  restartAcme() {
    const previous = this.acme;
    if (previous) previous.stop();
    this.acme = startAcme(this.config, {
      log,
      previous,
      workers: () => [...this.pool].filter((worker) => worker.svr.ready && !worker.svr.retiring),
    });
  }

  async openControlSocket() {
    const socketPath = serverSocketPath(this.options.controlSocket);
    if (!socketPath) return;
    try {
      await startControlServer(socketPath, {
        reload: () => this.reload('svr reload'),
        'reopen-logs': async () => this.reopenLogs(),
      }, log);
    } catch (error) {
      log.error(`${error.message}: svr reload cannot reach this primary (SIGHUP still reloads)`);
    }
  }

  exitWithErrors(what, errors, status) {
    log.error(`${what}:`);
    for (const error of errors) log.error(`  ${error}`);
    for (const worker of this.alive) worker.process.kill('SIGKILL');
    process.exit(status);
  }

  listenForSignals() {
    process.on('SIGHUP', () => this.reload('SIGHUP'));
    process.on('SIGUSR1', () => this.reopenLogs()); // nginx's convention; also keeps Node's inspector off
    process.on('SIGTERM', () => this.stop('SIGTERM'));
    process.on('SIGINT', () => this.stop('SIGINT'));
    cluster.on('exit', (worker, code, signal) => this.onExit(worker, code, signal));
  }

  fork() {
    cluster.setupPrimary({ execArgv: workerExecArgv(this.config) }); // the config of this moment (a reload may change it)
    const worker = cluster.fork();
    worker.svr = { startedAt: Date.now(), ready: false, retiring: false, served: 0 };
    this.alive.add(worker);
    this.reaper.watch(worker.process.pid);
    worker.once('exit', () => {
      this.alive.delete(worker);
      this.rebalancer.forget(worker);
    });
    const holdSockets = this.heldSockets.enabled();
    worker.on('message', (message, handle) => this.dispatch(message, handle, worker));
    if (holdSockets) this.heldSockets.giveTo(worker); // before the config: the worker listens as soon as it has it
    worker.send({ type: 'config', config: this.config, configFile: this.options.configFile, disableMods: this.options.disableMods, holdSockets });
    this.watchdog.watch(worker);
    this.pool.add(worker);
    return worker;
  }

  // balanceConnections (rebalance.js): a worker holding more than its share of the busy keep-alive
  // connections is asked to close the extra ones. Only under SCHED_NONE, and not while the pool
  // is changing (a reload or a stop moves connections anyway). Every report is kept; the decision
  // comes DECIDE_DELAY_MS after the first report since the last one, with the others of that moment.
  balance(worker, busy) {
    if (busy === undefined || cluster.schedulingPolicy !== cluster.SCHED_NONE) return;
    this.rebalancer.report(worker, busy);
    if (this.balanceTimer) return;
    this.balanceTimer = setTimeout(() => {
      this.balanceTimer = null;
      if (this.config?.balanceConnections === false || this.reloading || this.stopping) return;
      const serving = [...this.pool].filter((w) => w.svr.ready && !w.svr.retiring);
      const forMs = 2 * beatInterval(this.config?.workerStallTimeout ?? 0);
      for (const [busiest, count] of this.rebalancer.decide(serving)) {
        if (busiest.isConnected()) busiest.send({ type: 'shed-connections', count, forMs }, () => {});
      }
    }, DECIDE_DELAY_MS);
    this.balanceTimer.unref();
  }

  // Resolves with the worker's listeners once it listens; rejects if it fails first.
  whenReady(worker) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error(`worker ${worker.process.pid} did not start listening within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      worker.svr.starting = {
        ready(message) {
          cleanup();
          worker.svr.ready = true;
          log.info(`worker ${worker.process.pid} ready`);
          resolve(message.listeners);
        },
        fatal: (message) => fail(Object.assign(new Error(message.message), { code: message.code })),
      };
      const onExit = (code, signal) => fail(new Error(`worker ${worker.process.pid} exited during start-up (${describeExit(code, signal)})`));
      function cleanup() {
        clearTimeout(timer);
        worker.svr.starting = null;
        worker.off('exit', onExit);
      }
      function fail(error) {
        cleanup();
        reject(error);
      }
      worker.once('exit', onExit);
    });
  }

  onExit(worker, code, signal) {
    this.pool.delete(worker);
    if (this.metrics) this.metrics.onWorkerExit(worker);
    if (this.cacheIndex) this.cacheIndex.workerGone(worker); // its cache locks, so others stop waiting
    if (this.stopping) return this.exitWhenEmpty();
    if (!this.started) return; // start() reports it: a worker that cannot start is fatal
    if (worker.svr.retiring || worker.svr.abandoned) return;
    const uptime = Date.now() - worker.svr.startedAt;
    log.warn(`worker ${worker.process.pid} died (${describeExit(code, signal)}) after ${uptime} ms`);
    if (this.metrics) this.metrics.count('restarts');
    this.countDeath(worker, uptime);
    this.replaceLater(this.backoffDelay());
  }

  // The backoff is for a crash loop at start: a worker that died
  // before it was ready, or young without having served a request. A worker that served was
  // killed by a request (or an operator): it is replaced at once, however often that happens.
  countDeath(worker, uptime) {
    const crashLoop = !worker.svr.ready || (uptime < STABLE_UPTIME_MS && worker.svr.served === 0);
    this.earlyDeaths = crashLoop ? this.earlyDeaths + 1 : 0;
  }

  // A worker hit an uncaught exception: it keeps accepting until its replacement listens, then
  // is drained as in a reload (idle keep-alive connections get a grace, not a cut).
  // One counter for the host, kept across reloads (the counts go on); a reload that changes
  // rateLimitStore starts a new one, with empty counts.
  rateCounterFor(config) {
    const settings = JSON.stringify(config.rateLimitStore);
    if (this.rateCounter && this.rateCounter.configured === settings) return this.rateCounter;
    if (this.rateCounter) this.rateCounter.close();
    this.rateCounter = Object.assign(createRateCounter(config.rateLimitStore, log), { configured: settings });
    return this.rateCounter;
  }

  // The proxy cache's index (proxy-cache-index.js), made anew, with an emptied directory, when
  // a config changes what it bounds.
  cacheIndexFor(config) {
    const settings = JSON.stringify([config.proxyCache, config.stateDirectory, cachesAnything(config)]);
    if (this.cacheSettings === settings) return;
    this.cacheSettings = settings;
    try {
      this.cacheIndex = primaryCacheIndex(config, log, () => this.alive);
    } catch (error) {
      this.cacheIndex = null;
      log.error(`proxy cache: cannot prepare its directory: ${error.message}; nothing is cached`);
    }
  }

  onRecycle(worker, message) {
    if (this.stopping || !this.started || worker.svr.retiring || worker.svr.abandoned) return;
    worker.svr.retiring = true;
    this.pool.delete(worker);
    const uptime = Date.now() - worker.svr.startedAt;
    log.warn(`worker ${worker.process.pid} is recycling after an uncaught exception (${message.message}) after ${uptime} ms`);
    if (this.metrics) this.metrics.count('recycles');
    if (Number.isInteger(message.served)) worker.svr.served = message.served;
    this.countDeath(worker, uptime);
    this.replaceLater(this.backoffDelay()).then(() => this.drain(worker, RELOAD_IDLE_GRACE_MS));
  }

  // The first death is replaced at once; each further death of a young worker doubles the wait.
  backoffDelay() {
    if (this.earlyDeaths <= 1) return 0;
    return Math.min(BACKOFF_BASE_MS * 2 ** (this.earlyDeaths - 2), BACKOFF_CAP_MS);
  }

  // Resolves once the replacement listens, or failed, or was not needed.
  replaceLater(delay) {
    log.info(`starting a replacement worker in ${delay} ms`);
    return new Promise((resolve) => setTimeout(resolve, delay)).then(() => {
      // A reload may have refilled the pool meanwhile: never run more than `workers`.
      if (this.stopping || this.pool.size >= workerCount(this.config)) return undefined;
      const worker = this.fork();
      return this.whenReady(worker).catch((error) => log.error(`replacement worker failed: ${error.message}`));
    });
  }

  // After logrotate: every process opens its log files again (lib/log-file.js says why no line is
  // lost or torn). Workers do it when the message reaches them.
  reopenLogs() {
    try {
      log.reopen();
    } catch (error) {
      log.error(`cannot reopen the error log: ${error.message}`);
      return { ok: false, message: `cannot reopen the error log: ${error.message}` };
    }
    let count = 0;
    for (const worker of this.alive) {
      if (worker.isConnected()) { worker.send({ type: 'reopen-logs' }); count++; }
    }
    log.info(`log files reopened; asked ${count} worker(s) to reopen theirs`);
    return { ok: true, message: `log files reopened by the primary; ${count} worker(s) asked to reopen theirs` };
  }

  // Resolves with the outcome, {ok, message}, of a reload that reads the config after this call:
  // one asked for during a reload waits for the next one.
  reload(reason) {
    return new Promise((resolve) => {
      if (this.stopping) return resolve({ ok: false, message: 'svr is stopping' });
      this.reloadWaiters.push(resolve);
      if (this.reloading || !this.started) this.reloadQueued = true;
      else this.runReload(reason);
    });
  }

  async runReload(reason) {
    this.reloading = true;
    this.reloadQueued = false;
    const waiters = this.reloadWaiters.splice(0);
    log.info(`${reason}: reloading the config`);
    await notifyStatus('reloading', log);
    const outcome = await this.reloadOnce();
    for (const resolve of waiters) resolve(outcome);
    this.reloading = false;
    if (this.stopping) return;
    await notifyStatus(outcome.ok ? 'reloaded' : 'reload failed, serving with the previous config', log);
    if (this.reloadQueued) this.runReload('queued reload');
  }

  async reloadOnce() {
    const { config, errors } = await this.runStartSteps();
    if (this.stopping) return { ok: false, message: 'svr is stopping' };
    if (errors.length === 0) return this.rollWorkers(config);
    const lines = ['reload failed, still serving with the previous config:', ...errors.map((error) => `  ${error}`)];
    for (const line of lines) log.error(line);
    return { ok: false, message: lines.join('\n') };
  }

  // One at a time: a new worker listens before an old one stops accepting and drains.
  async rollWorkers(config) {
    const startedAt = Date.now();
    const previous = this.config;
    const old = [...this.pool];
    const target = workerCount(config);
    const fresh = [];
    const stopped = []; // the retired workers' "stopped accepting"
    let retired = 0;
    this.config = config;
    try {
      for (let i = 0; i < Math.max(old.length, target); i++) {
        if (i < target) {
          const worker = this.fork();
          fresh.push(worker);
          await this.whenReady(worker);
        }
        if (i < old.length) {
          stopped.push(this.whenStoppedAccepting(old[i]));
          this.retire(old[i]);
          retired++;
        }
      }
      // "complete" means only new workers accept: a client connecting after it gets the new config.
      await Promise.all(stopped);
      const message = `reload complete: ${old.length} worker(s) replaced by ${target} in ${Date.now() - startedAt} ms`;
      log.info(message);
      this.restartAcme();
      await forgetSockets(this.heldSockets.keepOnly(configuredKeys(config)), log);
      await storeSockets(this.heldSockets.handles, log);
      if (hasRateLimits(config)) this.rateCounterFor(config);
      this.cacheIndexFor(config);
      if (this.metrics) this.metrics.count('reloads');
      return { ok: true, message };
    } catch (error) {
      // The stop drains every worker; abandoning them would cut requests.
      if (this.stopping) return { ok: false, message: 'svr is stopping' };
      const message = `reload failed, still serving with the previous config: ${error.message}`;
      log.error(message);
      this.config = previous;
      this.heldSockets.keepOnly(configuredKeys(previous)); // a new port a new worker opened closes again
      for (const worker of fresh) this.abandon(worker);
      for (let i = 0; i < retired; i++) this.replaceLater(0);
      return { ok: false, message };
    }
  }

  // Resolves once a draining worker says it stopped accepting, or is gone; after at most
  // STOPPED_ACCEPTING_WAIT_MS whatever happened, so a reload never hangs on a worker that is stuck.
  whenStoppedAccepting(worker) {
    if (worker.isDead()) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(), STOPPED_ACCEPTING_WAIT_MS);
      function done() {
        clearTimeout(timer);
        worker.svr.stoppedAccepting = null;
        worker.off('exit', done);
        resolve();
      }
      worker.svr.stoppedAccepting = done;
      worker.once('exit', done);
    });
  }

  retire(worker) {
    worker.svr.retiring = true;
    this.pool.delete(worker);
    this.drain(worker, RELOAD_IDLE_GRACE_MS);
  }

  abandon(worker) {
    worker.svr.abandoned = true;
    this.pool.delete(worker);
    worker.process.kill('SIGKILL');
  }

  // A stop keeps to shutdownTimeout; a reload or recycle lets responses that are still moving go
  // on up to reloadTransferTimeout (the worker decides which).
  // delayMs: health.drainDelay on stop (the worker keeps serving that long, health at 503).
  drain(worker, idleGraceMs, { stopping = false, delayMs = 0 } = {}) {
    if (worker.isDead()) return; // died during a reload before its turn to retire
    const timeoutMs = this.config.shutdownTimeout;
    const transferTimeoutMs = stopping ? timeoutMs : Math.max(timeoutMs, this.config.reloadTransferTimeout);
    if (worker.isConnected()) worker.send({ type: 'drain', idleGraceMs, timeoutMs, transferTimeoutMs, delayMs });
    const backstop = setTimeout(() => worker.process.kill('SIGKILL'), delayMs + transferTimeoutMs + 2000);
    worker.once('exit', () => clearTimeout(backstop));
  }

  stop(signal) {
    if (this.stopping) {
      log.warn(`${signal} again: stopping now`);
      for (const worker of this.alive) worker.process.kill('SIGKILL');
      process.exit(1);
    }
    if (!this.config) { // still in the start's steps: no worker yet, nothing to drain
      log.info(`${signal}: stopping before any worker started`);
      process.exit(0);
    }
    this.stopping = true;
    if (this.acme) this.acme.stop();
    for (const resolve of this.reloadWaiters.splice(0)) resolve({ ok: false, message: 'svr is stopping' });
    this.heldSockets.closeAll();
    log.info(`${signal}: stopping gracefully (in-flight requests get up to ${this.config.shutdownTimeout} ms)`);
    for (const worker of this.alive) this.drain(worker, 0, { stopping: true, delayMs: (this.config.health && this.config.health.drainDelay) || 0 });
    this.exitWhenEmpty();
  }

  exitWhenEmpty() {
    if (this.alive.size > 0) return;
    log.info('stopped');
    process.exit(0);
  }
}

// The one start-up line tests and users look for; it names what was really bound
// ("http://[::]:80" is every interface, "http://127.0.0.1:8080" one address, "http+unix:/run/x.sock").
function banner(listeners, detail) {
  const addresses = listeners.map(({ scheme, address }) => describeListenAddress(scheme, address)).join(' and ');
  return `svr ${version} listening on ${addresses} (${detail})`;
}

function hasRateLimits(config) {
  return config.rateLimits.length > 0;
}

function describeExit(code, signal) {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

// How connections reach workers (frozen at the first fork, so a reload keeps it): the config's
// schedulingPolicy, default "none", unless NODE_CLUSTER_SCHED_POLICY is set (docs/performance.md).
// "rr" spreads a burst of keep-alive connections evenly (with "none", 5 opened together landed 4
// or 5 on one worker in 10 of 30 trials), but the primary hands connections to a worker whose
// event loop is stuck as readily as to a healthy one, and Node keeps such a hand-off open until
// the client gives up, even after the watchdog has replaced the worker; with "none" a stuck
// worker accepts nothing and its replacement takes the waiting connections.
function chooseSchedulingPolicy(config) {
  if (process.env.NODE_CLUSTER_SCHED_POLICY) return;
  cluster.schedulingPolicy = config.schedulingPolicy === 'none' ? cluster.SCHED_NONE : cluster.SCHED_RR;
}

function runPrimary(options) {
  return new Supervisor(options).start();
}

module.exports = { runPrimary, banner, Supervisor };
