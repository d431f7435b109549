'use strict';
// The workers ask the primary's counter (counter.js) through the `rate-limit` question
// (messages.js). The takes of one event-loop turn travel as one question and come back as one
// answer, so under load a worker asks once per turn, not once per request.
//
//   worker:  ipcRateLimiter(ask, log) -> { take(key, rate, burst) -> answer | Promise<answer> }
//   primary: answerRateLimits(takes, counter, workers) -> the answer's value (or a Promise of it)
//   either:  inProcessRateLimiter(counter) -> the same limiter, for --single-threaded
//
// The primary may answer with a lease (local-store.js): tokens this worker then spends for that
// key without asking, for up to LEASE_MS.
//
// A primary that does not answer within NO_ANSWER_MS (or is gone) lets the request through: the
// limit is a protection of the applications behind svr, and a worker without its primary is
// already draining.

const NO_ANSWER_MS = 1000;
const LEASE_MS = 1000;
const LEASES_KEPT = 10000; // keys a worker holds leases for, the oldest go first
const LET_THROUGH = Object.freeze({ allowed: true, aheadMs: 0 });

function ipcRateLimiter(ask, log) {
  const leases = new Map(); // key -> { tokens, until }
  let batch = null;
  let warned = false;

  function fromWire(wire, key) {
    if (!Array.isArray(wire)) return LET_THROUGH;
    const [allowed, ms, unavailable, lease] = wire;
    if (allowed !== 1) return { allowed: false, retryMs: ms, unavailable: unavailable === 1 };
    if (lease > 0) {
      if (!leases.has(key) && leases.size >= LEASES_KEPT) leases.delete(leases.keys().next().value);
      leases.set(key, { tokens: lease, until: Date.now() + LEASE_MS });
    }
    return { allowed: true, aheadMs: ms };
  }

  // A token of a live lease, or null.
  function fromLease(key) {
    const lease = leases.get(key);
    if (lease === undefined) return null;
    if (lease.tokens <= 0 || Date.now() >= lease.until) {
      leases.delete(key);
      return null;
    }
    lease.tokens--;
    return LET_THROUGH;
  }

  function flush() {
    const { takes, resolvers, keys } = batch;
    batch = null;
    ask('rate-limit', takes, { timeoutMs: NO_ANSWER_MS }).then((answers) => {
      resolvers.forEach((resolve, i) => resolve(fromWire(Array.isArray(answers) ? answers[i] : null, keys[i])));
    }, (error) => {
      if (!warned) log.warn(`rate limits: ${error.message}; letting limited requests through`);
      warned = true;
      for (const resolve of resolvers) resolve(LET_THROUGH);
    });
  }

  return {
    take(key, rate, burst) {
      return fromLease(key) || new Promise((resolve) => {
        if (batch === null) {
          batch = { takes: [], resolvers: [], keys: [] };
          setImmediate(flush);
        }
        batch.takes.push([key, rate, burst]);
        batch.resolvers.push(resolve);
        batch.keys.push(key);
      });
    },
  };
}

// Workers run user code (mods, scripts), which can ask the primary anything: a question that is
// not a list of [string, positive number, positive number] is refused.
// workers: how many serve; each lease is at most 1/(2 x workers + 2) of the tokens left.
function answerRateLimits(takes, counter, workers) {
  if (!Array.isArray(takes) || !takes.every(isTake)) throw new Error('expected [[key, rate, burst], ...]');
  const leaseShare = 2 * Math.max(1, workers) + 2;
  const answers = takes.map(([key, rate, burst]) => counter.take(key, rate, burst, leaseShare));
  if (answers.some((answer) => typeof answer.then === 'function')) return Promise.all(answers).then((list) => list.map(toWire));
  return answers.map(toWire);
}

function isTake(take) {
  return Array.isArray(take) && typeof take[0] === 'string' && take[0].length <= 1024
    && take[1] > 0 && Number.isFinite(take[1]) && take[2] >= 1 && Number.isFinite(take[2]);
}

// On the wire an answer is [allowed 1/0, aheadMs or retryMs, unavailable 1/0, lease tokens].
function toWire(answer) {
  return answer.allowed ? [1, answer.aheadMs, 0, answer.lease || 0] : [0, answer.retryMs, answer.unavailable ? 1 : 0, 0];
}

function inProcessRateLimiter(counter) {
  return { take: (key, rate, burst) => counter.take(key, rate, burst) };
}

module.exports = { ipcRateLimiter, answerRateLimits, inProcessRateLimiter };
