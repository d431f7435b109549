'use strict';
// Every message the primary and a worker send each other over the cluster's IPC channel, in one
// table: its fields, who sends it, and what answers it. Both ends dispatch from this table
// (createDispatcher): a type that is not in it, or that comes from the wrong side, is logged once
// per type and ignored, so a new message is added here first.
//
// `ask`/`answer` are the one generic request and answer: a worker asks the primary a named
// question (createAsker) and awaits its answer, with a timeout; the primary answers from its table
// of questions (answerQuestion). Shared state that lives in the primary (metrics totals today) is
// reached this way.

const PRIMARY = 'primary';
const WORKER = 'worker';

const MESSAGES = {
  // --- primary -> worker ---
  'held-socket': { from: PRIMARY, fields: ['key'], handle: true, answer: null,
    about: 'a listening socket the primary holds (held-sockets.js), sent before the config: the worker listens on it instead of binding' },
  config: { from: PRIMARY, fields: ['config', 'configFile', 'disableMods', 'holdSockets'], answer: 'ready or fatal',
    about: 'the validated config; the worker builds its pipeline and listeners and serves' },
  'shed-connections': { from: PRIMARY, fields: ['count', 'forMs'], answer: null,
    about: 'close this many busy keep-alive connections at their next request (rebalance.js)' },
  'reopen-logs': { from: PRIMARY, fields: [], answer: null, about: 'open the log files again (after logrotate)' },
  drain: { from: PRIMARY, fields: ['idleGraceMs', 'timeoutMs', 'transferTimeoutMs', 'delayMs'], answer: 'stopped-accepting, then the exit',
    about: 'stop accepting, finish the requests in flight, exit' },
  'no-more-connections': { from: PRIMARY, fields: [], answer: null,
    about: 'the answer to stopped-accepting: nothing more is on its way, the worker may exit once idle' },
  'metrics-flush': { from: PRIMARY, fields: [], answer: 'metrics', about: 'send the counts now (a scrape is being rendered)' },
  answer: { from: PRIMARY, fields: ['id', 'ok', 'value', 'error'], answer: null, about: 'the answer to an ask' },
  'acme-challenge': { from: PRIMARY, fields: ['id', 'action', 'record'], answer: 'acme-done',
    about: 'answer (action "add") or forget ("remove") an ACME challenge: { type, token, identifier, keyAuthorization }' },
  'acme-certificate': { from: PRIMARY, fields: ['id', 'name'], answer: 'acme-done',
    about: 'load the new ACME certificate from the state directory for new connections' },
  'cache-forget': { from: PRIMARY, fields: ['id', 'path'], answer: 'cache-forgotten',
    about: 'drop a proxy-cache folder (a purge) or file (an eviction) from memory (proxy-cache-index.js)' },

  // --- worker -> primary ---
  'listening-socket': { from: WORKER, fields: ['key'], handle: true, answer: null,
    about: 'the socket this worker bound first, for the primary to hold' },
  ready: { from: WORKER, fields: ['listeners'], answer: null, about: 'listening: { scheme, port, address } per listener' },
  fatal: { from: WORKER, fields: ['code', 'message'], answer: null, about: 'cannot start (the worker exits 1)' },
  recycle: { from: WORKER, fields: ['message', 'served'], answer: 'a replacement, then drain',
    about: 'an uncaught exception: replace me, then drain me' },
  'stopped-accepting': { from: WORKER, fields: [], answer: 'no-more-connections', about: 'a draining worker closed its listeners' },
  heartbeat: { from: WORKER, fields: ['served', 'running', 'busy', 'note'], answer: null,
    about: 'the event loop turns (watchdog.js); busy keep-alive connections (rebalance.js); note: sent as a request entered user code' },
  metrics: { from: WORKER, fields: ['report'], answer: null, about: 'the request counts since the last report' },
  ask: { from: WORKER, fields: ['id', 'question', 'data'], answer: 'answer', about: 'a question for the primary (QUESTIONS)' },
  'acme-done': { from: WORKER, fields: ['id', 'ok', 'message'], answer: null,
    about: 'the answer to acme-challenge or acme-certificate (process/acme.js waits for every worker\'s)' },
  'cache-stored': { from: WORKER, fields: ['file', 'bytes'], answer: null,
    about: 'a proxy-cache file written: the primary counts it against proxyCache.maxBytes/maxEntries' },
  'cache-unlock': { from: WORKER, fields: ['folder'], answer: null,
    about: 'the fetch that held a URL\'s cache lock is stored (or not): the waiting workers may look' },
  'cache-forgotten': { from: WORKER, fields: ['id'], answer: null, about: 'the answer to cache-forget' },
};

// The questions a worker may ask: what `data` carries and what `value` the answer has.
const QUESTIONS = {
  'metrics-text': { data: 'none', value: 'the Prometheus text of every worker\'s totals' },
  'rate-limit': { data: '[[key, rate, burst], ...]: the limited requests of one event-loop turn',
    value: '[[allowed 1/0, aheadMs or retryMs, unavailable 1/0, lease tokens], ...] (rate-limits/ipc.js)' },
  'cache-lock': { data: 'a proxy-cache folder (one URL)', value: '"granted" (fetch it) or, once the holder unlocks, "released"' },
  'cache-purged': { data: 'a proxy-cache folder the worker removed', value: 'true once every worker has dropped it from memory' },
};

const DEFAULT_ASK_TIMEOUT_MS = 2000;

// handlers: { type: (message, handle, from) => void } for the types this side receives (`side` is
// the receiver). Returns dispatch(message, handle, from); `from` is passed through (the primary
// passes the worker the message came from). A known type without a handler is ignored quietly
// (metrics messages when metrics are off); an unknown one is logged once.
function createDispatcher(side, handlers, log) {
  const reported = new Set();
  const ignoreOnce = (type, why) => {
    const key = String(type);
    if (reported.has(key)) return;
    reported.add(key);
    log.warn(`${side}: ignored a message of ${why} type ${JSON.stringify(key).slice(0, 60)}`);
  };
  return function dispatch(message, handle, from) {
    const type = message !== null && typeof message === 'object' ? message.type : undefined;
    const entry = Object.hasOwn(MESSAGES, type) ? MESSAGES[type] : null;
    if (entry === null) {
      if (isNodeInternal(message)) return;
      ignoreOnce(type, 'unknown');
      return;
    }
    if (entry.from === side) {
      ignoreOnce(type, `the ${side}'s own`);
      return;
    }
    const handler = handlers[type];
    if (handler) handler(message, handle, from);
  };
}

// Node's cluster module talks over the same channel ({ cmd: 'NODE_CLUSTER', ... }): not ours.
function isNodeInternal(message) {
  return message !== null && typeof message === 'object' && typeof message.cmd === 'string' && message.cmd.startsWith('NODE_');
}

// Worker side. send(message): process.send. Returns { ask(question, data, { timeoutMs }), onAnswer }:
// onAnswer is the dispatcher's handler for `answer`. ask rejects on timeout, on an answer with
// ok: false, and at once when there is no primary to ask.
function createAsker(send, { connected = () => true } = {}) {
  const pending = new Map();
  let nextId = 1;
  return {
    ask(question, data = null, { timeoutMs = DEFAULT_ASK_TIMEOUT_MS } = {}) {
      return new Promise((resolve, reject) => {
        if (!connected()) return reject(new Error('no primary'));
        const id = nextId++;
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`the primary did not answer "${question}" within ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(id, (message) => {
          clearTimeout(timer);
          if (message.ok) resolve(message.value);
          else reject(new Error(message.error || `the primary refused "${question}"`));
        });
        return send({ type: 'ask', id, question, data });
      });
    },
    onAnswer(message) {
      const settle = pending.get(message.id);
      if (!settle) return; // timed out already
      pending.delete(message.id);
      settle(message);
    },
  };
}

// Primary side: answers one `ask` from answerers { question: async (data, worker) => value }.
// A question nobody answers, or an answerer that throws, is answered ok: false.
async function answerQuestion(worker, message, answerers) {
  const answerer = Object.hasOwn(answerers, message.question) ? answerers[message.question] : null;
  let reply;
  if (!answerer) {
    reply = { type: 'answer', id: message.id, ok: false, error: `no answer to "${String(message.question).slice(0, 60)}"` };
  } else {
    try {
      reply = { type: 'answer', id: message.id, ok: true, value: await answerer(message.data, worker) };
    } catch (error) {
      reply = { type: 'answer', id: message.id, ok: false, error: error.message };
    }
  }
  if (worker.isConnected()) worker.send(reply, () => {});
}

module.exports = { MESSAGES, QUESTIONS, PRIMARY, WORKER, createDispatcher, createAsker, answerQuestion, DEFAULT_ASK_TIMEOUT_MS };
