'use strict';
// The rate-limit decision: GCRA, the "generic cell rate algorithm", which is a token bucket kept
// as one number per client: the theoretical arrival time (tat) of its next request. A bucket of
// `burst` tokens refilled at `rate` a second becomes
//   intervalMs  = 1000 / rate            (the time one token takes to come back)
//   toleranceMs = (burst - 1) * interval (how far ahead of now tat may run)
// A request at `now` is let through when tat - now <= toleranceMs, and then moves tat one interval
// on; a refused request changes nothing. One number per key (no window of timestamps to keep),
// exact at any rate (no window edges letting 2x through), and the same few lines run in Redis
// (redis-store.js) as here.
//
//   decide(storedTat, now, intervalMs, toleranceMs) ->
//     { allowed: true,  aheadMs, tat }   aheadMs: how far tat ran ahead of now before this
//                                        request (the wait of a delayed request, limit_req style)
//     { allowed: false, retryMs }        when the same request would next be let through
//   tokensLeft(tat, now, intervalMs, toleranceMs) -> whole tokens still in the bucket at `now`

function decide(storedTat, now, intervalMs, toleranceMs) {
  const tat = storedTat > now ? storedTat : now;
  const aheadMs = tat - now;
  if (aheadMs > toleranceMs) return { allowed: false, retryMs: aheadMs - toleranceMs };
  return { allowed: true, aheadMs, tat: tat + intervalMs };
}

function tokensLeft(tat, now, intervalMs, toleranceMs) {
  return Math.max(0, Math.floor((toleranceMs + intervalMs - Math.max(0, tat - now)) / intervalMs));
}

// rate (requests a second) and burst (requests at once) -> the two numbers decide() needs.
function bucketOf(rate, burst) {
  const intervalMs = 1000 / rate;
  return { intervalMs, toleranceMs: (Math.max(1, burst) - 1) * intervalMs };
}

module.exports = { decide, bucketOf, tokensLeft };
