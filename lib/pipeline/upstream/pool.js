'use strict';
// Upstreams and how a pool picks one, whatever the protocol (upstream/index.js).
//
// Upstream: one target, its transport and that transport's connection state (an HTTP upstream's
// keep-alive agent), its open-request count (for least-connections) and its health:
//   - passive: `maxFails` connection failures or timeouts within `failTimeout` ms take it out
//     for `failTimeout` ms (as nginx's max_fails / fail_timeout);
//   - active (optional `healthCheck`): a GET of `path` every `interval` ms; anything but a
//     2xx/3xx answer within `timeout` ms takes it out until a check passes again.
// UpstreamPool.pick(tried): round robin or least connections over the healthy upstreams not yet
// tried for this request; when every upstream is out, the healthy-looking rule is dropped and
// all of them are tried (a short outage of everything must not outlast the outage itself).

class Upstream {
  constructor(target, transport, { verifyTLS, idleMs }) {
    this.target = target;
    this.transport = transport;
    this.connection = transport.connection(target, { verifyTLS, idleMs });
    this.label = target.label;
    this.active = 0;
    this.fails = 0;
    this.firstFailAt = 0;
    this.downUntil = 0;
    this.checkFailed = false;
  }

  isUp(now = Date.now()) {
    return !this.checkFailed && now >= this.downUntil;
  }

  recordFailure(passive, now = Date.now()) {
    if (now - this.firstFailAt > passive.failTimeout) {
      this.fails = 0;
      this.firstFailAt = now;
    }
    this.fails++;
    if (this.fails >= passive.maxFails) {
      this.downUntil = now + passive.failTimeout;
      this.fails = 0;
    }
  }

  recordSuccess() {
    this.fails = 0;
  }
}

class UpstreamPool {
  constructor(upstreams, { balance, passive, check }) {
    this.upstreams = upstreams;
    this.passive = passive;
    this.check = check;
    this.cursor = 0;
    this.pickFrom = balance === 'least-connections' ? this.leastConnections : this.roundRobin;
    this.timers = [];
  }

  pick(tried) {
    const now = Date.now();
    let candidates = this.upstreams.filter((u) => !tried.has(u) && u.isUp(now));
    if (candidates.length === 0) candidates = this.upstreams.filter((u) => !tried.has(u));
    if (candidates.length === 0) return null;
    return this.pickFrom(candidates);
  }

  roundRobin(candidates) {
    // Walk the full list from the cursor so every upstream gets its turn.
    const n = this.upstreams.length;
    for (let step = 0; step < n; step++) {
      const upstream = this.upstreams[(this.cursor + step) % n];
      if (candidates.includes(upstream)) {
        this.cursor = (this.cursor + step + 1) % n;
        return upstream;
      }
    }
    return candidates[0];
  }

  leastConnections(candidates) {
    let best = null;
    for (const upstream of this.roundRobinOrder()) {
      if (!candidates.includes(upstream)) continue;
      if (best === null || upstream.active < best.active) best = upstream;
    }
    this.cursor = (this.cursor + 1) % this.upstreams.length; // ties rotate
    return best;
  }

  roundRobinOrder() {
    const n = this.upstreams.length;
    return Array.from({ length: n }, (_, i) => this.upstreams[(this.cursor + i) % n]);
  }

  // Active checks: one timer per upstream, unref'd so they never keep a draining worker alive.
  startChecks(requestHeaders) {
    if (!this.check) return;
    for (const upstream of this.upstreams) {
      const timer = setInterval(() => runCheck(upstream, this.check, requestHeaders), this.check.interval);
      timer.unref();
      this.timers.push(timer);
      runCheck(upstream, this.check, requestHeaders);
    }
  }

  stopChecks() {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
  }
}

// One check through the upstream's transport; its answer (the first, if it settles twice) decides.
function runCheck(upstream, check, headers) {
  let settled = false;
  upstream.transport.check(upstream, check, headers, (ok) => {
    if (settled) return;
    settled = true;
    upstream.checkFailed = !ok;
  });
}

module.exports = { Upstream, UpstreamPool };
