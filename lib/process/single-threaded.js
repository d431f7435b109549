'use strict';
// --single-threaded: the worker's code in this one process, for debugging. SIGHUP re-reads
// the config and rebuilds the pipeline in place; a changed port needs a restart.

const log = require('../log');
const accessLog = require('../access-log');
const { banner } = require('./primary');
const { prepareStart } = require('./start');
const { removeStaleSockets } = require('../config/listen-address');
const { startWorker, drainDelay } = require('./worker');
const { installCrashHandlers } = require('../request-context');
const { createLocalMetricsSink } = require('./metrics');
const { EXIT_CONFIG, startFailureStatus } = require('./exit-status');
const { startAcme } = require('./acme');
const { createRateCounter } = require('./rate-limits/counter');
const { inProcessRateLimiter } = require('./rate-limits/ipc');
const { inProcessCacheIndex } = require('./proxy-cache-index');

// The start's steps (start.js), as the primary runs them; their messages are logged.
async function runStartSteps(options) {
  const { config, errors, problem, warnings, infos } = await prepareStart(options);
  for (const info of infos) log.info(info);
  for (const warning of warnings) log.warn(warning);
  return { config, errors, problem };
}

async function runSingleThreaded(options) {
  let worker = null;
  let acme = null; // the ACME manager, once the process listens
  // Signals are handled from the start: one arriving while the start's steps run must not kill
  // the process with Node's default action.
  process.on('SIGTERM', () => { if (acme) acme.stop(); stop(worker, 'SIGTERM'); });
  process.on('SIGINT', () => { if (acme) acme.stop(); stop(worker, 'SIGINT'); });
  process.on('SIGHUP', () => { if (worker) reload(worker, options); });
  process.on('SIGUSR1', () => { // after logrotate, as the primary does
    try { accessLog.reopen(); log.reopen(); } catch (error) { log.error(`cannot reopen a log file: ${error.message}`); }
  });
  const { config, errors, problem } = await runStartSteps(options);
  if (errors.length > 0) {
    log.error(`${problem || 'the config is invalid'}:`);
    for (const error of errors) log.error(`  ${error}`);
    process.exit(EXIT_CONFIG);
  }
  log.warn('running single-threaded: a crash stops the server (use this mode for debugging)');
  removeStaleSockets(config, log);
  worker = startWorker(config, options.configFile, {
    ready: (listeners) => {
      log.info(banner(listeners, `single-threaded, pid ${process.pid}`));
      // ACME orders in this process too, once it listens (it answers the CA's challenges).
      acme = startAcme(config, { log, deliver: (message) => (worker.onAcmeMessage(message).ok ? 1 : 0) });
    },
    fatal: (code, message) => {
      log.error(`cannot start: ${message}`);
      process.exit(startFailureStatus(code));
    },
    metricsSink: createLocalMetricsSink(config),
    // The counter lives in this process; a reload keeps it (and its rateLimitStore settings).
    rateLimiter: inProcessRateLimiter(createRateCounter(config.rateLimitStore, log)),
    cacheIndex: inProcessCacheIndex(config, log),
  }, { disableMods: options.disableMods });
  // No primary to replace this process: after an uncaught exception it finishes what it is
  // serving and stops (exit code 1).
  installCrashHandlers({ log, onCrash: (error) => (worker ? worker.recycle(error) : process.exit(1)) });
}

function stop(worker, signal) {
  if (!worker) {
    log.info(`${signal}: stopping before the server started`);
    process.exit(0);
  }
  if (worker.draining) {
    log.warn(`${signal} again: stopping now`);
    accessLog.flush();
    process.exit(1);
  }
  log.info(`${signal}: stopping gracefully`);
  worker.drain(0, worker.config.shutdownTimeout, { delayMs: drainDelay(worker.config) });
}

async function reload(worker, options) {
  const { config, errors } = await runStartSteps(options);
  if (errors.length > 0) {
    log.error('reload failed, still serving with the previous config:');
    for (const error of errors) log.error(`  ${error}`);
    return;
  }
  for (const key of ['secure', 'sport', 'enableHTTP2', 'disableNonEncryptedServer', 'disableToHTTPSRedirect']) {
    if (config[key] !== worker.config[key]) log.warn(`${key} changed: restart to apply it`);
  }
  if (config.port !== worker.config.port) log.warn('the port changed: restart to listen on the new one');
  try {
    await worker.build(config); // first: it is what refuses a config it cannot serve (bad wwwroot, say)
  } catch (error) {
    log.error(`reload failed, still serving with the previous config: ${error.message}`);
    return;
  }
  try { // renewed certificate files (already checked by the start steps), for new connections
    if (config.secure) for (const listener of worker.listeners) if (listener.reload) listener.reload(config);
  } catch (error) {
    log.error(`the new certificate files could not be loaded, new connections keep the old ones: ${error.message}`);
  }
  worker.config = config;
  log.info('reload complete');
}

module.exports = { runSingleThreaded };
