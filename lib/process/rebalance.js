'use strict';
// Busy keep-alive connections spread evenly over the workers, under schedulingPolicy "none".
//
// With "none" each worker accepts connections itself, and whichever wakes first takes a burst:
// five keep-alive connections opened together all landed on one of two workers in 5-16 of 30
// trials (docs/performance.md), and a client that keeps its connections (a load balancer, a
// benchmark, the SVR.JS blog's 5-connection test) then uses half the machine for as long as they
// live. So the primary reads, from every worker's heartbeat (and an early one as soon as its
// connections change), how many of its connections carried a request within the last heartbeat
// interval, and asks a worker holding more than its share to close
// that many: it answers the next request on each of them with `Connection: close` (a response
// every HTTP/1.1 client handles), the client reconnects, and the worker that is idle, not the
// busy one, is the one waiting in accept() to take it. HTTP/2 connections and idle ones are left
// alone. With "rr" the primary deals connections in turn and none of this runs.
//
//   planShedding(counts) -> Map(worker -> connections to close)     (pure; counts: Map(worker -> n))
//   rebalancer = new Rebalancer({ intervalMs }); rebalancer.report(worker, busy, now);
//   rebalancer.decide(serving, now) -> [[worker, n], ...]            (DECIDE_DELAY_MS after a report)

// A worker is asked to shed only when it holds more than its share and at least this many more
// busy connections than the least loaded worker: a difference of one cannot be evened out.
const MIN_DIFFERENCE = 2;
// A decision waits this long after a report for the other workers' reports of the same moment: a
// burst reaches every worker's count at once, and each reports it a few milliseconds apart
// (process/watchdog.js's early beat); deciding on the first alone moved connections that were fine.
const DECIDE_DELAY_MS = 40;
// After an order, the next waits this long: the worker closes at its next requests, the clients
// reconnect, and both workers' early beats (at most one per 200 ms each) report the new counts.
const SETTLE_MS = 300;

function planShedding(counts) {
  const plan = new Map();
  if (counts.size < 2) return plan;
  let total = 0;
  let least = Infinity;
  for (const n of counts.values()) {
    total += n;
    least = Math.min(least, n);
  }
  const share = Math.ceil(total / counts.size);
  for (const [worker, n] of counts) {
    if (n > share && n - least >= MIN_DIFFERENCE) plan.set(worker, n - share);
  }
  return plan;
}

class Rebalancer {
  // intervalMs(): how often workers report now (the heartbeat interval; a reload may change it).
  constructor({ intervalMs }) {
    this.intervalMs = intervalMs;
    this.reports = new Map(); // worker -> { busy, at }
    this.quietUntil = 0;
  }

  forget(worker) {
    this.reports.delete(worker);
  }

  // A worker's heartbeat, kept whether or not it serves yet: a worker's first beat goes as it
  // starts, and its next may be a second away (or further, while a script holds its event loop).
  report(worker, busy, now = Date.now()) {
    this.reports.set(worker, { busy, at: now });
  }

  // The orders to send now: [[worker, connections to close], ...], when every serving worker
  // (ready, not retiring) has reported recently and no order is settling.
  decide(serving, now = Date.now()) {
    if (now < this.quietUntil) return [];
    const intervalMs = this.intervalMs();
    const counts = new Map();
    for (const w of serving) {
      const seen = this.reports.get(w);
      if (!seen || now - seen.at > 2 * intervalMs) return []; // not every worker has spoken
      counts.set(w, seen.busy);
    }
    const plan = planShedding(counts);
    if (plan.size > 0) this.quietUntil = now + SETTLE_MS;
    return [...plan];
  }
}

module.exports = { planShedding, Rebalancer, DECIDE_DELAY_MS, SETTLE_MS };
