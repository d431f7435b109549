'use strict';
// Which request is user code (mods, serverSideScript.js) working for? The scripting stage runs
// every request inside requestContext.run({ req, res, fail }), and AsyncLocalStorage carries
// that store into every callback and promise the code starts. So when a callback throws (an
// uncaught exception) or a promise nobody handles rejects, the worker knows the request to
// answer with a 500 instead of dropping every connection it has.
//
// The policy (installCrashHandlers):
//   - unhandled rejection inside a request: that request gets a 500; the worker keeps serving
//     (the same as an async handler whose promise rejects: no callback stack was torn apart);
//   - uncaught exception (or an unhandled rejection outside any request): the request, if any,
//     gets a 500 when still open; then onCrash() — the worker stops accepting, lets its other
//     in-flight requests finish and exits, and the primary replaces it.

const { AsyncLocalStorage } = require('node:async_hooks');

const requestContext = new AsyncLocalStorage();

// The worker's watchdog is told when a request enters user code (lib/process/watchdog.js).
let userCodeObserver = null;
function observeUserCode(observer) {
  userCodeObserver = observer;
}

// requestContext.run(state, fn) for the scripting stage, telling the observer first. fn takes no
// argument (it reads requestContext.getStore()): ALS.run would make an array for them per request.
function runUserCode(state, fn) {
  if (userCodeObserver) userCodeObserver(state);
  return requestContext.run(state, fn);
}

function describeError(error) {
  return error instanceof Error ? (error.stack || `${error.name}: ${error.message}`) : `a thrown ${typeof error}: ${String(error)}`;
}

function where(state) {
  return state ? ` while serving ${state.req.method} ${state.req.url}` : '';
}

function answer(state, error) {
  if (!state) return;
  try {
    state.fail(error);
  } catch (failure) {
    try { state.res.destroy(); } catch { /* nothing more to do */ }
  }
}

// log: { error }; onCrash(error): called once per uncaught exception (after the 500).
function installCrashHandlers({ log, onCrash }) {
  // The 500 page's renderer logs the stack when it can still answer; else it is logged here.
  const report = (state, kind, error) => {
    const answering = state && !state.res.headersSent;
    log.error(`${kind}${where(state)}: ${answering ? `${error && error.message}` : describeError(error)}`);
  };
  const crash = (error, kind) => {
    const state = requestContext.getStore();
    report(state, kind, error);
    answer(state, error);
    onCrash(error);
  };
  process.on('uncaughtException', (error) => crash(error, 'uncaught exception'));
  process.on('unhandledRejection', (reason) => {
    const state = requestContext.getStore();
    if (!state) return crash(reason, 'unhandled promise rejection');
    report(state, 'unhandled promise rejection', reason);
    answer(state, reason);
  });
}

module.exports = { requestContext, runUserCode, observeUserCode, installCrashHandlers, describeError };
