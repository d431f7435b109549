'use strict';
// Brute-force protection for the 401 rules, with SVR.JS's numbers: after 10 failed logins from
// one client address, that address gets 429 for 5 minutes; when the lock ends it may try 5 more
// times before the next lock; a successful login forgets it. Counted per worker process (svr's
// workers share nothing), so with N workers a client gets at most 10 x N tries per lock period.
// At most MAX_CLIENTS addresses are remembered; the oldest is forgotten first.

const MAX_FAILURES = 10;
const FAILURES_AFTER_LOCK = 5;
const LOCK_MS = 5 * 60 * 1000;
const MAX_CLIENTS = 10000;

function createBruteForceGuard({ now = Date.now } = {}) {
  const clients = new Map(); // address -> { failures, lockedUntil }

  function isLocked(address) {
    const entry = clients.get(address);
    if (!entry || entry.lockedUntil === 0) return false;
    if (now() < entry.lockedUntil) return true;
    entry.lockedUntil = 0;
    entry.failures = FAILURES_AFTER_LOCK;
    return false;
  }

  function failed(address) {
    let entry = clients.get(address);
    if (!entry) {
      if (clients.size >= MAX_CLIENTS) clients.delete(clients.keys().next().value);
      entry = { failures: 0, lockedUntil: 0 };
      clients.set(address, entry);
    }
    entry.failures++;
    if (entry.failures < MAX_FAILURES) return false;
    entry.lockedUntil = now() + LOCK_MS;
    return true; // locked now
  }

  function succeeded(address) {
    clients.delete(address);
  }

  return { isLocked, failed, succeeded };
}

module.exports = { createBruteForceGuard, MAX_FAILURES, LOCK_MS };
