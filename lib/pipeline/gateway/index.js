'use strict';
// The gateway stage: PHP and other programs behind the `fastcgi` rules (a FastCGI server such as
// PHP-FPM) and the `cgi` rules (a process per request). Rules are tried in order, the fastcgi
// ones first; the first whose path prefix (and host) matches decides.
//
//   createGatewayStage(site, { cache }) -> null (no rules) | stage(req, res, next)
//     cache: the pipeline's response cache (../cache/), or null: `fastcgi` rules with
//            `"cache": true` answer from it and fill it, as a caching proxy rule does
//     stage.close()  closes the pooled FastCGI connections (a worker that drains)
// Scripts are found with the path policy the static stage serves by (../path-policy.js: hidden
// files, the server's own files, symbolic links, containment in the web root): nothing it
// refuses ever runs.
//
// Parts: rules.js (the rules, compiled once), script-path.js (URL path -> script, PATH_INFO),
// environment.js (RFC 3875 variables), cgi-response.js (the script's header block and body),
// ../upstream/request-body.js (a body read whole before PHP-FPM is asked), fastcgi/ (records,
// pooled connections, one request), cgi-runner.js (processes). A caching
// fastcgi rule goes through the pipeline's response cache (../cache/), which calls runFastcgi
// with its hooks for what it cannot answer itself.
//
// It runs after mods and serverSideScript.js, so it sees the URL they leave (sanitized again when
// they changed it), and only the static stage comes after it: a file with a gateway extension
// that no rule runs is refused here with 404, so its source is never sent.

const fs = require('node:fs');
const path = require('node:path');
const { sanitizeTarget } = require('../../http/target');
const { pathPolicyFor } = require('../path-policy');
const { compileTrustedProxies } = require('../../http/trusted-proxies');
const { requestHasBody, declaredOver, refuseBody } = require('../upstream');
const { compileGatewayRules, findRule } = require('./rules');
const { findScript, hasExtension } = require('./script-path');
const { buildEnvironment } = require('./environment');
const { CgiResponse } = require('./cgi-response');
const { fastcgiRequest } = require('./fastcgi/request');
const { runCgi } = require('./cgi-runner');

const MAX_LOCAL_REDIRECTS = 10;

// The cache's request headers (../cache/fetch.js) as params: its validators, and the client's
// conditions and Range it leaves out (undefined).
const VALIDATOR_PARAMS = {
  'if-none-match': 'HTTP_IF_NONE_MATCH', 'if-modified-since': 'HTTP_IF_MODIFIED_SINCE', 'if-match': 'HTTP_IF_MATCH',
  'if-unmodified-since': 'HTTP_IF_UNMODIFIED_SINCE', 'if-range': 'HTTP_IF_RANGE', range: 'HTTP_RANGE',
};

// accessRules: the access rules stage (nonStandardCodes), or null; a local redirect's path meets it
// as a request's own path does.
function createGatewayStage(site, { cache = null, accessRules = null } = {}) {
  const { rules, errors } = compileGatewayRules(site.config);
  if (errors.length) throw Object.assign(new Error(errors.join('\n')), { configErrors: errors });
  if (rules.length === 0) return null;
  const { resolve } = pathPolicyFor(site);
  const { isTrusted } = compileTrustedProxies(site.config.trustedProxies); // its errors: client-address.js's
  const extensions = [...new Set(rules.flatMap((rule) => rule.extensions))];
  const log = site.log;

  function currentPath(req) {
    if (req.svr.url === req.url) return { ok: true, pathname: req.svr.pathname };
    return sanitizeTarget(req.url);
  }

  function route(req, res, next, pathname, redirects) {
    const rule = findRule(rules, req, pathname);
    const found = rule === null ? null : findScript(pathname, rule, resolve);
    if (found === null) {
      const name = pathname.slice(pathname.lastIndexOf('/') + 1);
      return hasExtension(name, extensions) ? site.sendError(req, res, 404) : next();
    }
    if (found.status) return site.sendError(req, res, found.status);
    // PHP and CGI scripts read CONTENT_LENGTH bytes: a body of unknown length (chunked, or HTTP/2
    // without content-length) would reach them empty. Streaming forbids counting it first.
    if (req.headers['content-length'] === undefined && requestHasBody(req)) return site.sendError(req, res, 411);
    if (declaredOver(req, rule.maxBodySize)) return refuseLargeBody(req, res, rule);
    if (rule.kind === 'fastcgi') {
      if (rule.cache && cache !== null) {
        const ctx = { isTrusted, sendError: site.sendError, found, next, redirects };
        return req.method === 'PURGE' ? cache.purge(req, res, rule, ctx) : cache.handle(req, res, rule, ctx, runFastcgi);
      }
      return runFastcgi(req, res, rule, { found, next, redirects }, null);
    }
    const response = gatewayResponse(req, res, rule, next, redirects, null);
    const params = buildEnvironment(req, site, found, rule.env, isTrusted(req.socket.remoteAddress));
    return runScript(req, res, rule, found, params, response);
  }

  // hooks: the cache's (../cache/fetch.js), or null.
  function gatewayResponse(req, res, rule, next, redirects, hooks) {
    return new CgiResponse(req, res, {
      fail: (status, reason) => {
        log.warn(`${rule.kind} ${rule.label}: ${req.method} ${req.url}: ${reason}; answering ${status}`);
        // A body that did not come whole (an upload stalled until firstByte) leaves the connection
        // unusable: it closes after the answer, where Node would wait for the rest of the body up
        // to requestTimeout, to discard it.
        if (req.httpVersionMajor === 1 && requestHasBody(req) && !req.complete && !res.headersSent) res.setHeader('Connection', 'close');
        if (hooks && hooks.onFailure(status)) return; // a stale entry answered (stale-if-error)
        site.sendError(req, res, status);
      },
      localRedirect: (location) => {
        if (hooks) hooks.onNoResponse();
        redirect(req, res, next, location, redirects + 1);
      },
      onHead: hooks && hooks.onResponse,
      onGone: hooks && hooks.onNoResponse,
    });
  }

  // One request to the rule's FastCGI server; the cache calls it (with its hooks) for what it
  // cannot answer itself.
  function runFastcgi(req, res, rule, { found, next, redirects }, hooks) {
    const response = gatewayResponse(req, res, rule, next, redirects, hooks);
    let params = buildEnvironment(req, site, found, rule.env, isTrusted(req.socket.remoteAddress));
    if (hooks && hooks.requestHeaders) params = withValidators(params, hooks.requestHeaders);
    return fastcgiRequest(req, res, {
      pool: rule.pool, params, timeouts: rule.timeouts, response, log, label: rule.label, bufferBody: rule.requestBuffering,
    });
  }

  // Before any of the body is read (../upstream/request-body.js refuseBody).
  function refuseLargeBody(req, res, rule) {
    log.warn(`${rule.kind} ${rule.label}: ${req.method} ${req.url}: a body of ${req.headers['content-length']} bytes, over maxBodySize (${rule.maxBodySize}); answering 413`);
    return refuseBody(req, res, site.sendError);
  }

  // RFC 3875 6.2.2: `Location: /path` alone is answered as if /path had been asked for, with GET
  // (the request body is used up), past the access rules for /path (a 403 or login rule on it
  // holds for a script's redirect as for a client's request).
  function redirect(req, res, next, location, redirects) {
    const target = sanitizeTarget(location);
    if (!target.ok || redirects > MAX_LOCAL_REDIRECTS) {
      log.warn(`gateway: ${req.url}: ${target.ok ? `more than ${MAX_LOCAL_REDIRECTS} local redirects` : `a local redirect to a bad path ${JSON.stringify(location)}`}; answering 502`);
      return site.sendError(req, res, 502);
    }
    req.method = 'GET';
    delete req.headers['content-length'];
    delete req.headers['content-type'];
    delete req.headers['transfer-encoding'];
    req.url = location;
    req.svr.url = location;
    req.svr.pathname = target.pathname;
    const go = () => route(req, res, next, target.pathname, redirects);
    return accessRules === null ? go() : accessRules(req, res, go);
  }

  function runScript(req, res, rule, found, params, response) {
    if (rule.interpreter === null) {
      try {
        fs.accessSync(found.filename, fs.constants.X_OK);
      } catch {
        log.warn(`cgi ${rule.label}: ${found.filename} is not executable; answering 403`);
        return site.sendError(req, res, 403);
      }
    }
    const env = { PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin' };
    for (const [name, value] of params) env[name] = value;
    const [command, ...args] = rule.interpreter === null ? [found.filename] : [...rule.interpreter, found.filename];
    return runCgi(req, res, {
      command, args, cwd: path.dirname(found.filename), env, timeoutMs: rule.timeoutMs, slots: rule.slots, response, log, label: rule.label,
      bufferBody: rule.requestBuffering,
    });
  }

  function stage(req, res, next) {
    const target = currentPath(req);
    if (!target.ok) return site.sendError(req, res, target.status);
    return route(req, res, next, target.pathname, 0);
  }

  stage.close = () => {
    for (const rule of rules) if (rule.pool) rule.pool.close();
  };
  return stage;
}

// The client's own validators give way to the stored entry's.
function withValidators(params, headers) {
  const added = Object.entries(headers).map(([name, value]) => [VALIDATOR_PARAMS[name], value]).filter(([name]) => name !== undefined);
  if (added.length === 0) return params;
  const names = new Set(added.map(([name]) => name));
  return [...params.filter(([name]) => !names.has(name)), ...added.filter(([, value]) => value !== undefined)];
}

module.exports = { createGatewayStage };
