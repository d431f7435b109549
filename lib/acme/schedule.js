'use strict';
// When to renew, and when to try again after a failure.
//
// renewAt(x509, ari, now): inside the CA's ACME Renewal Information window when it offers one (a
// random point, chosen once per window, as RFC 9773 §4.2 asks, so that many servers do not all
// come at the window's start), else at two thirds of the certificate's lifetime.
// retryDelay(failures): 5 minutes after the first failure, doubling, at most 12 hours apart. Let's
// Encrypt allows 5 failed validations per name per hour: these retries make at most 4 in the first
// hour, and a misconfigured server settles at two attempts a day.

const CHECK_INTERVAL_MS = 12 * 60 * 60 * 1000; // "at least twice a day"
const RETRY_BASE_MS = 5 * 60 * 1000;
const RETRY_CAP_MS = 12 * 60 * 60 * 1000;

function lifetimeRenewAt(x509) {
  const from = Date.parse(x509.validFrom);
  const to = Date.parse(x509.validTo);
  return from + Math.floor((to - from) * 2 / 3);
}

// ari: { start, end, pick? } from the CA; pick is our chosen point, kept while the window stays.
function renewAt(x509, ari) {
  if (ari && Number.isFinite(ari.start) && Number.isFinite(ari.end)) {
    return Number.isFinite(ari.pick) && ari.pick >= ari.start && ari.pick <= ari.end ? ari.pick : ari.start;
  }
  return lifetimeRenewAt(x509);
}

function pickInWindow(start, end, random = Math.random) {
  return start + Math.floor((end - start) * random());
}

function retryDelay(failures, { baseMs = RETRY_BASE_MS, capMs = RETRY_CAP_MS } = {}) {
  if (failures <= 0) return 0;
  return Math.min(baseMs * 2 ** (failures - 1), capMs);
}

module.exports = { CHECK_INTERVAL_MS, RETRY_BASE_MS, RETRY_CAP_MS, renewAt, lifetimeRenewAt, pickInWindow, retryDelay };
