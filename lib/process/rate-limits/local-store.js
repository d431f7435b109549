'use strict';
// The counters of one host, in memory: key -> tat (gcra.js). Bounded: at most maxKeys keys; when
// a new key comes and the map is full, the key used least recently is forgotten (a Map keeps
// insertion order and every use (a refusal too) re-inserts its key, so that is the first one). A forgotten key
// starts again with a full bucket, which is what an idle key would have anyway; a flood of
// distinct keys (spoofed addresses behind a trusted proxy) costs at most maxKeys entries.
//
//   new LocalStore({ maxKeys, now }) .take(key, intervalMs, toleranceMs) -> decide()'s answer
//                                    .size

const { decide } = require('./gcra');

class LocalStore {
  constructor({ maxKeys, now = Date.now }) {
    this.maxKeys = maxKeys;
    this.now = now;
    this.tats = new Map();
  }

  take(key, intervalMs, toleranceMs) {
    const now = this.now();
    const stored = this.tats.get(key);
    const answer = decide(stored === undefined ? 0 : stored, now, intervalMs, toleranceMs);
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
