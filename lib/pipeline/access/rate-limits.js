'use strict';
// Stage: `rateLimits`, request rate limits per client. Runs after the access rules (so a rule
// keyed by user knows who logged in) and before the reverse proxy, mods and scripts.
//
// A rule matches by path prefix ("/api/" also takes "/api"), and optionally host and methods;
// the first matching rule counts the request. Its key is the client's address (the real one
// behind `trustedProxies`; for IPv6 its network of `ipv6Prefix` bits, a /64 by default), a header's value, or the user a 401 rule logged in (else the
// address). The counting is not done here: `limiter.take(key, rate, burst)` asks the host's one
// counter (the primary's, lib/process/rate-limits/), so every worker counts against the same
// bucket. Over the limit the request gets 429 with Retry-After, or with `"over": "delay"` waits
// its turn as nginx's limit_req does without nodelay.
//
// A refusal is remembered here until its Retry-After has passed: until then the same key is
// refused without asking the counter (exact: a refused request changes no count, and a bucket
// only refills with time), so a client hammering past its limit costs no IPC.
//
//   createRateLimitStage(site, limiter) -> null (no rules) | stage(req, res, next)
//   It sets req.svr.rateLimit ({ rule, outcome: 'refused' | 'delayed' | 'unavailable' }) for the metrics.

// Loaded at first use: a worker with no rate limits never needs node:crypto (test/pipeline/lazy-loading.test.js).
let cryptoModule = null;
const crypto = () => (cryptoModule ??= require('node:crypto'));
const { compileHostPattern } = require('../../http/host');
const { compileAddressList, plainAddress } = require('../../http/address-list');
const { ipv6Network } = require('../../http/ipv6-prefix');
const { splitTarget } = require('../../http/target');

const REFUSALS_REMEMBERED = 10000; // keys whose refusal a worker remembers, the oldest go first
const LONGEST_KEY = 200; // longer keys (a long header value) are hashed
const SUMMARY_MS = 10000;

function compileRule(entry) {
  const prefix = caseFolded(entry.path); // matched without regard to case: see findRule
  const exempt = compileAddressList(entry.exempt, 'exempt');
  return {
    name: entry.name || (entry.host ? `${entry.host}${entry.path}` : entry.path),
    prefix,
    bare: prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : null,
    matchesHost: compileHostPattern(entry.host),
    methods: entry.methods ? new Set(entry.methods.map((m) => m.toUpperCase())) : null,
    rate: entry.rate,
    burst: entry.burst,
    delay: entry.over === 'delay',
    exempt: exempt.size > 0 ? exempt : null,
    clientKey: compileKey(entry.key, entry.ipv6Prefix),
  };
}

// An address's bucket: an IPv4 address (also written ::ffff:a.b.c.d) is its own; an IPv6 address
// counts with the others of its network of `ipv6Prefix` bits, since one client is given a /64.
function compileAddressKey(ipv6Prefix) {
  return (address) => {
    const plain = plainAddress(address);
    return ipv6Prefix < 128 && plain.includes(':') ? `a:${ipv6Network(plain, ipv6Prefix)}` : `a:${plain}`;
  };
}

// "address", "user", "header:NAME" -> (req, address) -> the client's key
function compileKey(key, ipv6Prefix) {
  const addressKey = compileAddressKey(ipv6Prefix);
  if (key === 'user') return (req, address) => (req.svr.user ? `u:${req.svr.user}` : addressKey(address));
  if (key.startsWith('header:')) {
    const name = key.slice(7).toLowerCase();
    return (req, address) => {
      const value = req.headers[name];
      return value === undefined || value === '' ? addressKey(address) : `h:${Array.isArray(value) ? value.join(',') : value}`;
    };
  }
  return (req, address) => addressKey(address);
}

// The path is the decoded one the later stages map to a file or script (sanitize.js, rewrite.js
// keep it in req.svr.pathname): req.url keeps the client's percent-encoding, and `/%61pi/` must
// count as `/api/`. Letter case is not looked at: the applications behind a proxy rule often route
// `/LOGIN` as `/login` (Express, ASP.NET), and counting a spelling that finds nothing costs nobody.
function findRule(rules, req) {
  const path = caseFolded(req.svr.pathname ?? splitTarget(req.url).path);
  for (const rule of rules) {
    if (!path.startsWith(rule.prefix) && path !== rule.bare) continue;
    if (rule.matchesHost !== null && !rule.matchesHost(req)) continue;
    if (rule.methods !== null && !rule.methods.has(req.method)) continue;
    return rule;
  }
  return null;
}

// Upper, then lower case: letters whose upper case is an ASCII one fold with it ('ı' and 'I' to
// 'i', 'ſ' to 's'), as an application comparing upper-cased paths (.NET, Java) folds them;
// toLowerCase alone leaves '/loGın' apart from '/login'.
function caseFolded(path) {
  return path.toUpperCase().toLowerCase();
}

function fullKey(rule, clientKey) {
  const key = `${rule.name}\n${clientKey}`;
  if (key.length <= LONGEST_KEY) return key;
  return `${rule.name}\n#${crypto().createHash('sha256').update(clientKey).digest('base64')}`;
}

// Refusals in the error log: the first one after a quiet spell at once, the rest summed up once
// every SUMMARY_MS, so a flood writes a line every 10 s, not a line a request.
function createRefusalLog(log) {
  let counts = null; // rule name -> { refused, clients: Set }
  function summarize() {
    const lines = [...counts].map(([name, { refused, clients }]) => `${name}: ${refused} from ${clients.size}${clients.size >= 1000 ? '+' : ''} client(s)`);
    counts = null;
    if (lines.length > 0) {
      log.warn(`rate limits: refused in the last ${SUMMARY_MS / 1000} s: ${lines.join('; ')}`);
      counts = new Map();
      setTimeout(summarize, SUMMARY_MS).unref();
    }
  }
  return function refused(rule, client) {
    if (counts === null) {
      log.warn(`rate limits: ${rule.name}: refusing ${client} (over ${rule.rate}/s, burst ${rule.burst}); further refusals are summed every ${SUMMARY_MS / 1000} s`);
      counts = new Map();
      setTimeout(summarize, SUMMARY_MS).unref();
      return;
    }
    let entry = counts.get(rule.name);
    if (!entry) counts.set(rule.name, entry = { refused: 0, clients: new Set() });
    entry.refused++;
    if (entry.clients.size < 1000) entry.clients.add(client);
  };
}

function gone(res) {
  return res.destroyed === true || (res.stream !== undefined && res.stream.destroyed === true);
}

function createRateLimitStage(site, limiter) {
  const entries = site.config.rateLimits;
  if (entries.length === 0 || !limiter) return null;
  const rules = entries.map(compileRule);
  const refusedUntil = new Map(); // key -> ms since the epoch
  const noteRefusal = createRefusalLog(site.log);

  function refuse(req, res, rule, client, retryMs) {
    req.svr.rateLimit = { rule: rule.name, outcome: 'refused' };
    noteRefusal(rule, client);
    return site.sendError(req, res, 429, { headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryMs / 1000))) } });
  }

  function remember(key, until) {
    if (refusedUntil.size >= REFUSALS_REMEMBERED) refusedUntil.delete(refusedUntil.keys().next().value);
    refusedUntil.set(key, until);
  }

  function settle(req, res, next, rule, key, client, answer) {
    if (answer.allowed) {
      if (!rule.delay || answer.aheadMs < 1) return next();
      req.svr.rateLimit = { rule: rule.name, outcome: 'delayed' };
      setTimeout(() => { if (!gone(res)) next(); }, answer.aheadMs);
      return undefined;
    }
    if (gone(res)) return undefined;
    if (answer.unavailable) {
      req.svr.rateLimit = { rule: rule.name, outcome: 'unavailable' };
      return site.sendError(req, res, 503, { headers: { 'Retry-After': '1' } });
    }
    remember(key, Date.now() + answer.retryMs);
    return refuse(req, res, rule, client, answer.retryMs);
  }

  return function limitRate(req, res, next) {
    const rule = findRule(rules, req);
    if (rule === null) return next();
    const client = req.svr.clientAddress ?? req.socket.remoteAddress;
    if (rule.exempt !== null && rule.exempt.has(client)) return next();
    const key = fullKey(rule, rule.clientKey(req, client));
    const until = refusedUntil.get(key);
    if (until !== undefined) {
      const left = until - Date.now();
      if (left > 0) return refuse(req, res, rule, client, left);
      refusedUntil.delete(key);
    }
    const answer = limiter.take(key, rule.rate, rule.burst);
    if (typeof answer.then === 'function') return answer.then((a) => settle(req, res, next, rule, key, client, a));
    return settle(req, res, next, rule, key, client, answer);
  };
}

module.exports = { createRateLimitStage };
