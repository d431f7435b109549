'use strict';
// The host's rate-limit counter: the one place a host's limits are counted, so a client gets the
// configured rate whatever worker its connections land on. It lives in the primary (the workers
// ask it over IPC: ipc.js), or in the process itself with --single-threaded.
//
// Without `rateLimitStore.redis` the counts are this host's (local-store.js). With it they are
// Redis's, shared by every host that names the same Redis (redis-store.js); while Redis cannot
// answer, `rateLimitStore.whenDown` decides:
//   "local"  (default) this host limits on its own counters, as without Redis: each host then
//            lets a client have the full rate
//   "open"   nothing is limited
//   "closed" every limited request is refused (503 with Retry-After: 1)
//
//   createRateCounter(settings, log) -> { take(key, rate, burst, leaseShare?) -> answer | Promise<answer>,
//                                         status() -> { keys, redis: null | { up } }, close() }
//   answer: gcra.js's decide() answer (with `lease`, tokens for the asking worker, from the
//           local counts only: local-store.js), or { allowed: false, unavailable: true, retryMs } ("closed").

const { LocalStore } = require('./local-store');
const { RedisStore } = require('./redis-store');
const { bucketOf } = require('./gcra');

const OPEN = { allowed: true, aheadMs: 0 };
const CLOSED = { allowed: false, unavailable: true, retryMs: 1000 };

// settings: the config's rateLimitStore, its defaults applied by the schema.
function createRateCounter(settings, log) {
  const { redis: url, whenDown, timeout, maxKeys } = settings;
  const local = new LocalStore({ maxKeys });
  const shared = url ? new RedisStore({ url, timeoutMs: timeout, log }) : null;

  const withoutRedis = (key, intervalMs, toleranceMs, leaseShare) => {
    if (whenDown === 'open') return OPEN;
    if (whenDown === 'closed') return CLOSED;
    return local.take(key, intervalMs, toleranceMs, leaseShare);
  };

  function take(key, rate, burst, leaseShare = 0) {
    const { intervalMs, toleranceMs } = bucketOf(rate, burst);
    if (shared === null) return local.take(key, intervalMs, toleranceMs, leaseShare);
    if (!shared.isUp()) return withoutRedis(key, intervalMs, toleranceMs, leaseShare);
    return shared.take(key, intervalMs, toleranceMs)
      .then((answer) => answer || withoutRedis(key, intervalMs, toleranceMs, leaseShare));
  }

  return {
    take,
    status: () => ({ keys: local.size, redis: shared && { up: shared.isUp() } }),
    close: () => { if (shared) shared.close(); },
  };
}

module.exports = { createRateCounter };
