'use strict';
// The `proxy` key compiled once, when the pipeline is built: each rule gets its host matcher, its
// path prefix, its upstreams (parsed, with their keep-alive agents) and its fixed header edits.
// Nothing here runs per request.
//
//   compileProxyRules(config) -> { rules, errors }   errors name the key path.

const { compileHostPattern } = require('../../http/host');
const { Upstream, UpstreamPool } = require('./upstreams');

const DEFAULT_TIMEOUTS = { connect: 5000, headers: 60000, idle: 60000, tunnelIdle: 600000 };
const DEFAULT_PASSIVE = { maxFails: 1, failTimeout: 10000 };
const DEFAULT_CHECK = { path: '/', interval: 5000, timeout: 2000 };
const DEFAULT_UPGRADE_PROTOCOLS = ['websocket'];

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
  const prefix = entry.path || '/';
  if (!prefix.startsWith('/')) {
    errors.push(`${at}.path: expected a path prefix starting with "/", found ${JSON.stringify(prefix)}`);
    return null;
  }
  const timeouts = { ...DEFAULT_TIMEOUTS, ...entry.timeouts };
  const targets = [];
  (entry.upstreams || []).forEach((text, j) => {
    const target = parseUpstream(text);
    if (target.error) errors.push(`${at}.upstreams[${j}]: ${target.error}, found ${JSON.stringify(text)}`);
    else targets.push(target);
  });
  if (targets.length === 0) {
    if (!(entry.upstreams || []).length) errors.push(`${at}.upstreams: expected at least one upstream URL`);
    return null;
  }
  const verifyTLS = entry.verifyTLS !== false;
  const upstreams = targets.map((target) => new Upstream(target, { verifyTLS, idleMs: timeouts.idle }));
  return {
    prefix,
    // "/api/" also takes "/api" (forwarded as the prefix's root), as a user would expect.
    bare: prefix.length > 1 && prefix.endsWith('/') ? prefix.slice(0, -1) : null,
    matchesHost: compileHostPattern(entry.host),
    stripPrefix: entry.stripPrefix === true,
    preserveHost: entry.preserveHost !== false,
    via: entry.via === true,
    timeouts,
    upgradeProtocols: new Set((entry.upgradeProtocols || DEFAULT_UPGRADE_PROTOCOLS).map((token) => token.toLowerCase())),
    retries: entry.retries ?? 1,
    requestHeaders: compileHeaderEdits(entry.requestHeaders),
    responseHeaders: compileHeaderEdits(entry.responseHeaders),
    pool: new UpstreamPool(upstreams, {
      balance: entry.balance || 'round-robin',
      passive: { ...DEFAULT_PASSIVE, ...entry.passiveHealth },
      check: entry.healthCheck ? { ...DEFAULT_CHECK, ...entry.healthCheck } : null,
    }),
  };
}

// "http://host:port/base", "https://host/base", "unix:/path/to/socket" ->
// { protocol, hostname, port, socketPath, basePath, label } or { error }.
function parseUpstream(text) {
  const expected = 'expected an http://, https:// or unix:/absolute/path upstream';
  if (typeof text !== 'string') return { error: expected };
  if (text.startsWith('unix:')) {
    const socketPath = text.slice(5);
    if (!socketPath.startsWith('/')) return { error: `${expected} (a unix socket path must be absolute)` };
    return { protocol: 'http:', socketPath, hostname: 'localhost', port: undefined, basePath: '', label: text };
  }
  let url;
  try {
    url = new URL(text);
  } catch {
    return { error: expected };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { error: expected };
  if (url.search || url.hash || url.username || url.password) return { error: `${expected} without query, fragment or credentials` };
  return {
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : undefined,
    host: url.host,
    socketPath: undefined,
    basePath: url.pathname === '/' ? '' : url.pathname.replace(/\/$/, ''),
    label: `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`,
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

module.exports = { compileProxyRules, parseUpstream, findRule, upstreamPath };
