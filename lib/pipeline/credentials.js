'use strict';
// Checks HTTP Basic credentials against `users` (it enforces nothing itself: the access rules and
// the scripting stage ask it who the user is). Answers the name of the account whose password
// matches, else null; that name becomes req.svr.user (req.authUser for SVR.JS scripts).
// Accounts use SVR.JS's format (made by its svrpasswd.js): pass = hex of sha256(password + salt), or with "pbkdf2": true
// PBKDF2-HMAC-SHA512 (36250 iterations, 64 bytes), or with "scrypt": true scrypt (N=16384, 64 bytes).
//
// The slow hashes run on libuv's thread pool (crypto.pbkdf2/scrypt), never on the event loop, at
// most two at a time so that file reads always find a free pool thread. A successful check is
// remembered for five minutes, keyed by a digest of the Authorization header, so a logged-in client
// costs one hash, not one per request. Failed checks are counted per client address: after
// maxAuthFailures of them within authFailureWindow the address is blocked for that long, and its
// attempts are answered `throttled` without hashing. Each
// worker counts on its own. Unknown names are checked against a dummy account so that a wrong
// name takes as long as a wrong password.

// Loaded at first use: a worker with no users to check never needs node:crypto (test/pipeline/lazy-loading.test.js).
let cryptoModule = null;
const crypto = () => (cryptoModule ??= require('node:crypto'));

const PBKDF2_ITERATIONS = 36250;
const KEY_LENGTH = 64;

function parseBasic(header) {
  if (typeof header !== 'string') return null;
  const match = /^\s*basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return null;
  return { name: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function hash(user, password) {
  if (user.scrypt) {
    return new Promise((resolve, reject) => crypto().scrypt(password, user.salt, KEY_LENGTH, (e, key) => (e ? reject(e) : resolve(key.toString('hex')))));
  }
  if (user.pbkdf2) {
    return new Promise((resolve, reject) => crypto().pbkdf2(password, user.salt, PBKDF2_ITERATIONS, KEY_LENGTH, 'sha512', (e, key) => (e ? reject(e) : resolve(key.toString('hex')))));
  }
  return Promise.resolve(crypto().createHash('sha256').update(password + user.salt).digest('hex'));
}

function sameHex(a, b) {
  const left = Buffer.from(String(a).toLowerCase(), 'utf8');
  const right = Buffer.from(String(b).toLowerCase(), 'utf8');
  return left.length === right.length && crypto().timingSafeEqual(left, right);
}

const SUCCESS_TTL_MS = 5 * 60 * 1000; // a remembered success is checked again after 5 minutes
const SUCCESS_LIMIT = 1000; // remembered successes, oldest dropped first
const ADDRESS_LIMIT = 10000; // client addresses with failures tracked, oldest dropped first
const MAX_CONCURRENT_HASHES = 2; // of libuv's 4 pool threads: the others stay free for file I/O
const MAX_WAITING_HASHES = 64; // beyond this, an attempt is answered as throttled for a second

// Failed attempts per client address: after `limit` failures within `windowMs` of the first one,
// the address is blocked for `windowMs`. Bounded: the oldest address is forgotten first.
function createFailureCounter(limit, windowMs, log) {
  const byAddress = new Map(); // address -> { since, count, blockedUntil }

  function blockedFor(address, now) {
    const record = byAddress.get(address);
    if (record === undefined) return 0;
    if (record.blockedUntil > now) return record.blockedUntil - now;
    if (record.blockedUntil !== 0 || now - record.since > windowMs) byAddress.delete(address);
    return 0;
  }

  function fail(address, now) {
    let record = byAddress.get(address);
    if (record === undefined || now - record.since > windowMs) {
      if (record !== undefined) byAddress.delete(address);
      if (byAddress.size >= ADDRESS_LIMIT) byAddress.delete(byAddress.keys().next().value);
      record = { since: now, count: 0, blockedUntil: 0 };
      byAddress.set(address, record);
    }
    record.count++;
    if (record.count >= limit && record.blockedUntil === 0) {
      record.blockedUntil = now + windowMs;
      log.warn(`authentication: ${address} blocked for ${Math.ceil(windowMs / 1000)} s after ${record.count} failed attempts (maxAuthFailures)`);
    }
  }

  return { blockedFor, fail };
}

// At most MAX_CONCURRENT_HASHES slow hashes at once; the rest wait in line (bounded).
function createHashGate() {
  let running = 0;
  const waiting = [];
  const release = () => {
    running--;
    const next = waiting.shift();
    if (next) next();
  };
  function gate(work) {
    const start = () => {
      running++;
      if (running > gate.peak) gate.peak = running;
      return work().finally(release);
    };
    if (running < MAX_CONCURRENT_HASHES) return start();
    if (waiting.length >= MAX_WAITING_HASHES) return null;
    return new Promise((resolve) => waiting.push(resolve)).then(start);
  }
  gate.peak = 0; // the most hashes that ran at once
  return gate;
}

const NOT_THROTTLED = Object.freeze({ user: null, throttled: false, retryAfter: 0 });

// Returns authenticate(req[, { throttle }]) -> Promise<{ user, throttled, retryAfter }>, or null
// when no account is configured (throttle: false = neither blocked nor counted, for a caller that
// keeps its own count, as the nonStandardCodes 401 rules do with SVR.JS's numbers):
//   user        the name of the account whose password matches, else null
//   throttled   true when this client address is blocked (too many failures) and nothing was checked
//   retryAfter  seconds until the address may try again (0 unless throttled); for Retry-After
// options: maxAuthFailures (0 = no throttle), authFailureWindow (ms), log.
// authenticate.stats: { hashes, peakConcurrentHashes } (for tests and diagnostics).
function createAuthenticator(users, { maxAuthFailures = 10, authFailureWindow = 60000, log = { warn() {} } } = {}) {
  if (!Array.isArray(users) || users.length === 0) return null;
  const byName = new Map(users.map((user) => [user.name, user]));
  const dummy = { name: '', salt: 'svr-dummy-salt', pass: '0'.repeat(64), pbkdf2: users.some((u) => u.pbkdf2), scrypt: false };
  const remembered = new Map(); // sha256 of the Authorization header -> { user, expires }
  const failures = maxAuthFailures > 0 ? createFailureCounter(maxAuthFailures, authFailureWindow, log) : null;
  const gate = createHashGate();
  const stats = { hashes: 0 };

  function throttled(ms) {
    return { user: null, throttled: true, retryAfter: Math.max(1, Math.ceil(ms / 1000)) };
  }

  function rememberedUser(key, now) {
    const hit = remembered.get(key);
    if (hit === undefined) return null;
    if (hit.expires > now) return hit.user;
    remembered.delete(key);
    return null;
  }

  async function check(credentials) {
    const user = byName.get(credentials.name);
    const account = user || dummy;
    stats.hashes++;
    const computed = await hash(account, credentials.password);
    return user && sameHex(computed, user.pass) ? user.name : null;
  }

  async function authenticate(req, { throttle = true } = {}) {
    const header = req.headers.authorization;
    const credentials = parseBasic(header);
    if (!credentials) return NOT_THROTTLED;
    const now = Date.now();
    const key = crypto().createHash('sha256').update(header).digest('base64');
    const known = rememberedUser(key, now);
    if (known !== null) return { user: known, throttled: false, retryAfter: 0 };
    const address = (req.socket && req.socket.remoteAddress) || '';
    const counted = throttle && failures !== null;
    const wait = counted ? failures.blockedFor(address, now) : 0;
    if (wait > 0) return throttled(wait);
    const pending = gate(() => check(credentials));
    if (pending === null) return throttled(1000); // too many hashes waiting: shed, do not queue
    const name = await pending;
    if (name === null) {
      if (counted) failures.fail(address, Date.now());
      return NOT_THROTTLED;
    }
    if (remembered.size >= SUCCESS_LIMIT) remembered.delete(remembered.keys().next().value);
    remembered.set(key, { user: name, expires: Date.now() + SUCCESS_TTL_MS });
    return { user: name, throttled: false, retryAfter: 0 };
  }
  authenticate.stats = stats;
  Object.defineProperty(stats, 'peakConcurrentHashes', { get: () => gate.peak, enumerable: true });
  return authenticate;
}

module.exports = { createAuthenticator, parseBasic };
