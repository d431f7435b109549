'use strict';
// Stage: `nonStandardCodes`, SVR.JS's access rules, compiled once. Runs after rewriting and the
// custom headers, before mods and serverSideScript.js (SVR.JS's order).
//
// A rule matches when its `host` matches the Host header (http/host.js), its `ip` is the local
// address the connection came in on, and `url` equals the path (decoded, after rewriting, repeated
// slashes collapsed) or `regex` matches the URL (path plus query) or that path. Every rule is
// tried; the first matching rule that is not a 401 wins over any 401 rule (SVR.JS's precedence):
//   301/302/307/308  redirect to `location` ($1... from `regex`; a `url` rule keeps the query),
//                    encoded and kept on the rule's origin (redirect-location.js), else 400
//   401              HTTP Basic login against `users` (site.authenticate), limited to `userList`,
//                    with brute-force protection (brute-force.js) unless disableBruteProtection
//   403/451 + users  only for clients in that address list (`users` here is addresses, not accounts)
//   anything else    that status's error page (a code that is not an error status: 501)

const http = require('node:http');
const { compileHostPattern } = require('../../http/host');
const { compileAddressList } = require('../../http/address-list');
const { compileRegexString } = require('../../config/regex-string');
const { PRODUCT } = require('../../product');
const { createBruteForceGuard, MAX_FAILURES, LOCK_MS } = require('./brute-force');
const { compileLocationGuard } = require('./redirect-location');

const REDIRECTS = new Set([301, 302, 307, 308]);

function compileRule(rule) {
  const host = compileHostPattern(rule.host);
  const local = rule.ip ? compileAddressList([rule.ip], 'ip') : null;
  const clients = Array.isArray(rule.users) && (rule.scode === 403 || rule.scode === 451)
    ? compileAddressList(rule.users, 'users') : null;
  const realm = (rule.realm ?? `${PRODUCT} HTTP Basic Authorization`).replace(/[\\"]/g, '\\$&');
  return {
    scode: rule.scode,
    url: typeof rule.url === 'string' ? rule.url : null,
    regex: typeof rule.regex === 'string' ? withoutGlobal(compileRegexString(rule.regex)) : null,
    location: rule.location,
    isRedirect: REDIRECTS.has(rule.scode),
    safeLocation: REDIRECTS.has(rule.scode) ? compileLocationGuard(rule.location ?? '') : null,
    appliesTo: (req) => (host === null || host(req)) && (local === null || local.has(req.socket.localAddress)),
    clients,
    userList: Array.isArray(rule.userList) ? new Set(rule.userList) : null,
    bruteProtection: rule.disableBruteProtection !== true,
    challenge: `Basic realm="${realm}", charset="UTF-8"`,
  };
}

// A g or y flag would make test() remember where it stopped; the rules only ask "does it match".
function withoutGlobal(regex) {
  return /[gy]/.test(regex.flags) ? new RegExp(regex.source, regex.flags.replace(/[gy]/g, '')) : regex;
}

function matches(rule, url, path) {
  if (rule.url !== null) return rule.url === path;
  return rule.regex.test(url) || rule.regex.test(path);
}

// The first matching rule that is not a 401, else the first matching 401 rule, else null.
function findRule(rules, req) {
  const url = req.url;
  const path = (req.svr.pathname ?? url.split('?')[0]).replace(/\/{2,}/g, '/');
  let login = null;
  for (const rule of rules) {
    if (!rule.appliesTo(req) || !matches(rule, url, path)) continue;
    if (rule.scode === 401) {
      if (login === null) login = rule;
      continue;
    }
    if (rule.clients !== null && !rule.clients.has(clientOf(req))) continue;
    return { rule, url, path };
  }
  return login && { rule: login, url, path };
}

function clientOf(req) {
  return req.svr.clientAddress;
}

function redirectTarget(rule, url, path) {
  if (rule.regex !== null) {
    const replaced = url.replace(rule.regex, rule.location);
    return sameOrigin(rule, replaced !== url ? replaced : path.replace(rule.regex, rule.location));
  }
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  return query.trim() === '' ? rule.location : `${rule.location}?${query}`;
}

// A capture that starts with "/" would turn "/$1" into "//evil.example/...", which browsers read as
// another host. A location written as a path stays a path on this host.
function sameOrigin(rule, location) {
  return rule.location.startsWith('/') && !rule.location.startsWith('//') ? location.replace(/^\/{2,}/, '/') : location;
}

function createAccessRulesStage(site) {
  const rules = (site.config.nonStandardCodes || []).map(compileRule);
  if (rules.length === 0) return null;
  const guard = createBruteForceGuard();
  const { sendError, log } = site;

  async function login(req, res, next, rule) {
    const client = clientOf(req);
    const challenge = { headers: { 'WWW-Authenticate': rule.challenge } };
    if (rule.bruteProtection && guard.isLocked(client)) return sendError(req, res, 429);
    if (req.headers.authorization === undefined) return sendError(req, res, 401, challenge);
    // authenticate answers { user, throttled, retryAfter }; its own throttle is off here: these
    // rules count failures with SVR.JS's numbers (brute-force.js), or not at all with
    // disableBruteProtection, as SVR.JS does.
    const result = site.authenticate ? await site.authenticate(req, { throttle: false }) : null;
    if (result !== null && typeof result === 'object' && result.throttled) {
      return sendError(req, res, 429, { headers: { 'Retry-After': String(result.retryAfter || 1) } });
    }
    const name = result !== null && typeof result === 'object' ? result.user : result;
    if (name === null || (rule.userList !== null && !rule.userList.has(name))) {
      if (rule.bruteProtection && guard.failed(client)) {
        log.warn(`${client}: ${MAX_FAILURES} failed logins; answered 429 for ${LOCK_MS / 60000} minutes`);
      }
      return sendError(req, res, 401, challenge);
    }
    if (rule.bruteProtection) guard.succeeded(client);
    req.svr.user = name;
    req.authUser = name;
    return next();
  }

  return function accessRules(req, res, next) {
    const found = findRule(rules, req);
    if (found === null) return next();
    const { rule, url, path } = found;
    if (rule.scode === 401) return login(req, res, next, rule);
    if (rule.isRedirect) {
      const location = rule.safeLocation(redirectTarget(rule, url, path));
      if (location === null) return sendError(req, res, 400); // it would leave the rule's origin
      res.writeHead(rule.scode, { Location: location, 'Content-Length': 0 });
      return res.end();
    }
    const status = rule.scode >= 400 && http.STATUS_CODES[rule.scode] ? rule.scode : 501;
    return sendError(req, res, status);
  };
}

module.exports = { createAccessRulesStage };
