'use strict';
// The counters of one host, in memory: key -> tat (gcra.js). Bounded: at most maxKeys keys; when
// a new key comes and the map is full, the key used least recently is forgotten (a Map keeps
// insertion order and every use (a refusal too) re-inserts its key, so that is the first one). A forgotten key
// starts again with a full bucket, which is what an idle key would have anyway; a flood of
// distinct keys (spoofed addresses behind a trusted proxy) costs at most maxKeys entries.
//
//   new LocalStore({ maxKeys, now }) .take(key, intervalMs, toleranceMs, leaseShare) -> decide()'s answer
//                                    .size
//
// Leases: a worker asks the primary over IPC (ipc.js), and that round trip is most of what a
// limited request costs. So while a bucket is far from empty, an allowed request also takes a
// share of the tokens left (1/leaseShare of them; the primary passes twice its worker count plus
// two) and the worker spends them without asking, for up to a second. They leave the bucket at
// once, so a client never gets more than its rate; what it may lose is a lease's unspent tokens.
// Near the limit the share rounds down to nothing and every request is counted here, exactly.

const { decide, tokensLeft } = require('./gcra');

class LocalStore {
  // now: milliseconds with a fraction (Date.now() ticks in whole milliseconds, too coarse for a
  // rate of thousands a second with a small burst).
  constructor({ maxKeys, now = () => performance.timeOrigin + performance.now() }) {
    this.maxKeys = maxKeys;
    this.now = now;
    this.tats = new Map();
  }

  take(key, intervalMs, toleranceMs, leaseShare = 0) {
    const now = this.now();
    const stored = this.tats.get(key);
    const answer = decide(stored === undefined ? 0 : stored, now, intervalMs, toleranceMs);
    if (answer.allowed && leaseShare > 0 && answer.aheadMs === 0) {
      const lease = Math.floor(tokensLeft(answer.tat, now, intervalMs, toleranceMs) / leaseShare);
      if (lease > 0) {
        answer.lease = lease;
        answer.tat += lease * intervalMs;
      }
    }
    if (stored !== undefined) this.tats.delete(key); // re-inserted below: the most recently used
    else if (this.tats.size >= this.maxKeys) this.tats.delete(this.tats.keys().next().value);
    // A refusal keeps the count as it was, but counts as a use: a client being refused is the
    // last one a flood of new keys should push out.
    this.tats.set(key, answer.allowed ? answer.tat : stored);
    return answer;
  }

  get size() {
    return this.tats.size;
  }
}

module.exports = { LocalStore };
