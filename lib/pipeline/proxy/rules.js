'use strict';
// The `proxy` key compiled once, when the pipeline is built: each rule gets its host matcher, its
// path prefix, its upstreams (parsed, with their keep-alive agents) and its fixed header edits.
// Nothing here runs per request. The rule's defaults (timeouts, passive health, health checks) are
// the schema's, filled in when the config is read.
//
//   compileProxyRules(config) -> { rules, errors }   errors name the key path.

const { compileHostPattern } = require('../../http/host');
const { parseUpstream, createUpstream, UpstreamPool } = require('../upstream');

function compileProxyRules(config) {
  const rules = [];
  const errors = [];
  (config.proxy || []).forEach((entry, i) => {
    const at = `proxy[${i}]`;
    const rule = compileRule(entry, at, errors);
    if (rule) rules.push(rule);
  });
  return { rules, errors };
}

function compileRule(entry, at, errors) {
  const prefix = entry.path;
  if (typeof prefix !== 'string' || !prefix.startsWith('/')) {
    errors.push(`${at}.path: expected a path prefix starting with "/", found ${JSON.stringify(prefix)}`);
    return null;
  }
  const { timeouts } = entry;
  const targets = [];
  (entry.upstreams || []).forEach((text, j) => {
    const parsed = parseUpstream(text);
    if (parsed.error) errors.push(`${at}.upstreams[${j}]: ${parsed.error}, found ${JSON.stringify(text)}`);
    else targets.push(parsed);
  });
  if (targets.length === 0) {
    if (!(entry.upstreams || []).length) errors.push(`${at}.upstreams: expected at least one upstream URL`);
    return null;
  }
  const upstreams = targets.map((parsed) => createUpstream(parsed, { verifyTLS: entry.verifyTLS, idleMs: timeouts.idle }));
  return {
    at,
    prefix,
    // "/api/" also takes "/api" (forwarded as the prefix's root), as a user would expect.
    bare: prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : null,
    matchesHost: compileHostPattern(entry.host),
    stripPrefix: entry.stripPrefix,
    cache: entry.cache,
    preserveHost: entry.preserveHost,
    via: entry.via,
    timeouts,
    upgradeProtocols: new Set(entry.upgradeProtocols.map((token) => token.toLowerCase())),
    retries: entry.retries,
    requestBuffering: entry.requestBuffering === true,
    maxBodySize: entry.maxBodySize,
    requestHeaders: compileHeaderEdits(entry.requestHeaders),
    responseHeaders: compileHeaderEdits(entry.responseHeaders),
    pool: new UpstreamPool(upstreams, { balance: entry.balance, passive: entry.passiveHealth, check: entry.healthCheck }),
  };
}

// { set: { name: value }, remove: [name] } -> lowercased names, ready to apply.
function compileHeaderEdits(edits) {
  const set = Object.entries((edits && edits.set) || {}).map(([name, value]) => [name.toLowerCase(), value]);
  const remove = ((edits && edits.remove) || []).map((name) => name.toLowerCase());
  return set.length || remove.length ? { set, remove } : null;
}

// The rule for a request, or null. pathOnly: the request target's path (no query).
function findRule(rules, req, pathOnly) {
  for (const rule of rules) {
    if (!pathOnly.startsWith(rule.prefix) && pathOnly !== rule.bare) continue;
    if (rule.matchesHost && !rule.matchesHost(req)) continue;
    return rule;
  }
  return null;
}

// The path + query to ask the upstream for.
function upstreamPath(rule, target, url) {
  let rest = url;
  if (rule.stripPrefix) {
    rest = url.startsWith(rule.prefix) ? url.slice(rule.prefix.length) : url.slice(rule.bare.length);
    if (!rest.startsWith('/')) rest = `/${rest}`;
  }
  return target.basePath + rest;
}

module.exports = { compileProxyRules, findRule, upstreamPath };
