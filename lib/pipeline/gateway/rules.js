'use strict';
// The `fastcgi` and `cgi` keys compiled once, when the pipeline is built (defaults come from the
// schema): each rule gets its host matcher, its path prefix and, for FastCGI, its connection pool.
//
//   compileGatewayRules(config) -> { rules, errors }   errors name the key path.
//   rule: { kind: 'fastcgi' | 'cgi', at, label, prefix, matchesHost, extensions, index,
//           frontController, wholeDirectory, env, requestBuffering, maxBodySize, ... }; a
//           fastcgi rule also has `cache`

const { compileHostPattern } = require('../../http/host');
const { ConnectionPool } = require('./fastcgi/pool');
const { Slots } = require('./cgi-runner');

// "unix:/run/php/php8.2-fpm.sock" -> { path } (net.connect's options); "127.0.0.1:9000", "[::1]:9000" -> { host, port }
function parseFastcgiAddress(text) {
  if (text.startsWith('unix:')) {
    const socketPath = text.slice(5);
    return socketPath.startsWith('/') ? { path: socketPath } : null;
  }
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
  if (!m || Number(m[3]) < 1 || Number(m[3]) > 65535) return null;
  return { host: m[1] || m[2], port: Number(m[3]) };
}

const lower = (list) => (list || []).map((ext) => ext.toLowerCase());

function compileFastcgi(entry, at, errors) {
  const address = parseFastcgiAddress(String(entry.upstream));
  if (address === null) {
    errors.push(`${at}.upstream: expected "unix:/path/to/php-fpm.sock" or "HOST:PORT", found ${JSON.stringify(entry.upstream)}`);
    return null;
  }
  const { timeouts } = entry;
  return {
    kind: 'fastcgi',
    at,
    label: entry.upstream,
    prefix: entry.path,
    matchesHost: compileHostPattern(entry.host),
    extensions: lower(entry.extensions),
    index: entry.index,
    frontController: entry.frontController,
    wholeDirectory: false,
    env: entry.env,
    cache: entry.cache === true,
    requestBuffering: entry.requestBuffering !== false,
    maxBodySize: entry.maxBodySize,
    timeouts,
    pool: new ConnectionPool(address, { maxConnections: entry.maxConnections, connectMs: timeouts.connect, keepAliveMs: timeouts.keepAlive }),
  };
}

function compileCgi(entry, at, errors) {
  if (entry.path === undefined && entry.extensions.length === 0) {
    errors.push(`${at}: expected a "path" (a script directory such as "/cgi-bin/") or "extensions"`);
    return null;
  }
  const prefix = entry.path === undefined ? '/' : entry.path.endsWith('/') ? entry.path : `${entry.path}/`;
  return {
    kind: 'cgi',
    at,
    label: entry.path || entry.extensions.join(','),
    prefix,
    matchesHost: compileHostPattern(entry.host),
    extensions: lower(entry.extensions),
    index: [],
    frontController: null,
    wholeDirectory: entry.path !== undefined,
    env: entry.env,
    interpreter: entry.interpreter,
    timeoutMs: entry.timeout,
    slots: new Slots(entry.maxProcesses),
    requestBuffering: entry.requestBuffering !== false,
    maxBodySize: entry.maxBodySize,
  };
}

function compileGatewayRules(config) {
  const rules = [];
  const errors = [];
  (config.fastcgi || []).forEach((entry, i) => {
    const rule = compileFastcgi(entry, `fastcgi[${i}]`, errors);
    if (rule) rules.push(rule);
  });
  (config.cgi || []).forEach((entry, i) => {
    const rule = compileCgi(entry, `cgi[${i}]`, errors);
    if (rule) rules.push(rule);
  });
  return { rules, errors };
}

// The rule for a request, or null. pathname: the decoded, normalised path.
function findRule(rules, req, pathname) {
  for (const rule of rules) {
    if (!pathname.startsWith(rule.prefix) && pathname !== rule.prefix.slice(0, -1)) continue;
    if (rule.matchesHost && !rule.matchesHost(req)) continue;
    return rule;
  }
  return null;
}

module.exports = { compileGatewayRules, findRule, parseFastcgiAddress };
