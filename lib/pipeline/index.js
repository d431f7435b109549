'use strict';
// The request pipeline of a worker: an explicit list of stages, built once per config.
//
//   createPipeline(config, { log, configFile, disableMods }) ->
//     { site, proxy, handle(req, res), httpsRedirect(req, res), proxyRequest?(req, res), connect?(req, socket, head) }
//
// Every request runs these stages in order; each answers it or calls next() (docs/architecture.md):
//   serverHeaders   response-headers.js  Server + fixed customHeaders, first thing for every answer
//   strictHead      strict-head.js       505, 400, 501, 431 where Node's HTTP/1 parser is lenient
//   clientAddress   access/client-address.js  the client behind a proxy (enableIPSpoofing, trustedProxies)
//   blocklist       access/blocklist.js  403 for a client in `blacklist`, before anything else
//   sanitize        sanitize.js          414, 400, 403, OPTIONS *, 301 to the clean URL; fills req.svr
//   wwwRedirect     www-redirect.js      wwwredirect: 301 from `domain` to www.`domain`
//   postfixes       postfixes.js         wwwrootPostfixesVHost: hosts as subdirectories of the root
//   rewrite         rewrite.js           the rewrite map, first match wins, 403 on escape
//   pathHeaders     response-headers.js  customHeaders with {path}, filled after rewriting
//   hostHeaders     response-headers.js  customHeadersVHost: the matching host's headers on top
//   accessRules     access/rules.js      nonStandardCodes: redirects, 401 logins, 403/410/...
//   reverseProxy    proxy/               `proxy` rules: forwarded to upstreams (WebSocket upgrades too)
//   scripting       scripting/           mods in name order, then serverSideScript.js
//   status          status.js            /svrjsstatus.svr with allowStatus
//   staticFiles     static/              files, directories, listings
// Errors from any stage, and every error status, are answered by error-pages.js (sendError).
// With virtual hosts (virtual-hosts.js) the static stage and the error pages are built once per
// web root at load, and each request uses its own host's.
// The plain port of an HTTPS site runs a shorter list: serverHeaders, strictHead, pathHeaders,
// httpsRedirect.

const { createSite } = require('./site');
const { runStages } = require('./runner');
const { createErrorPages } = require('./error-pages');
const { createServerHeadersStage, createPathHeadersStage, createHostHeadersStage } = require('./response-headers');
const { createVirtualHosts } = require('./virtual-hosts');
const { createSanitizeStage } = require('./sanitize');
const { createStrictHeadStage } = require('./strict-head');
const { createRewriteStage } = require('./rewrite');
const { createWwwRedirectStage } = require('./www-redirect');
const { createPostfixStage } = require('./postfixes');
const { createClientAddressStage } = require('./access/client-address');
const { createBlocklistStage } = require('./access/blocklist');
const { createAccessRulesStage } = require('./access/rules');
const { createScriptingStage } = require('./scripting');
const { createStaticStage } = require('./static');
const { createStatusStage, createRequestCounters } = require('./status');
const { createHttpsRedirectStage } = require('./https-redirect');

// The proxy stage (and the http/https agents, tls and crypto it brings) is loaded only for a config
// with `proxy` rules: most sites have none, and each worker would hold its code for nothing.
function createProxyStage(site) {
  const rules = site.config.proxy;
  return Array.isArray(rules) && rules.length > 0 ? require('./proxy').createProxyStage(site) : null;
}

function createPipeline(config, { log, configFile, disableMods = false } = {}) {
  const site = createSite(config, { log, configFile });
  site.sendError = createErrorPages(site);
  applyEnvironment(config);
  const { scripting, staticFiles, rootScripting } = createRootStages(site, { disableMods });
  const fail = (req, res, error) => site.sendError(req, res, 500, { error });
  const proxy = createProxyStage(site);
  const counters = config.allowStatus ? createRequestCounters() : null;
  const stages = [
    createServerHeadersStage(site),
    createStrictHeadStage(site),
    createClientAddressStage(site),
    createBlocklistStage(site),
    createSanitizeStage(site),
    createWwwRedirectStage(site),
    createPostfixStage(site),
    createRewriteStage(site),
    createPathHeadersStage(site),
    createHostHeadersStage(site),
    createAccessRulesStage(site),
    proxy,
    scripting,
    createStatusStage(site, counters),
    staticFiles,
  ].filter(Boolean);
  const redirectStages = [
    createServerHeadersStage(site),
    createStrictHeadStage(site),
    createClientAddressStage(site),
    createBlocklistStage(site),
    createPathHeadersStage(site),
    createHostHeadersStage(site),
    createHttpsRedirectStage(site),
  ].filter(Boolean);
  return {
    site,
    proxy, // null without `proxy` rules; its upstreamHealth() feeds the metrics
    handle: withRecord(runStages(stages, fail), counters),
    httpsRedirect: withRecord(runStages(redirectStages, fail), counters),
    // Forward-proxy requests and CONNECT, for the listeners: null unless a mod takes them.
    proxyRequest: rootScripting && rootScripting.proxyRequest ? withRecord(rootScripting.proxyRequest, null) : null,
    connect: (rootScripting && rootScripting.connect) || null,
  };
}

// The stages that depend on the web root: the scripting stage (serverSideScript.js from the root)
// and the static stage. With virtual hosts there is one of each per web root (the static stage
// with its own error pages), and site.sendError answers with the request's own host's pages.
function createRootStages(site, { disableMods }) {
  const scriptingByRoot = new Map(); // one scripting stage per root, whatever the listing switch
  const scriptingFor = (hostSite) => {
    if (disableMods) return null;
    if (!scriptingByRoot.has(hostSite.root)) scriptingByRoot.set(hostSite.root, createScriptingStage(hostSite));
    return scriptingByRoot.get(hostSite.root);
  };
  const pick = createVirtualHosts(site, (hostSite) => {
    if (hostSite !== site) hostSite.sendError = createErrorPages(hostSite);
    return { root: hostSite.root, sendError: hostSite.sendError, staticFiles: createStaticStage(hostSite), scripting: scriptingFor(hostSite) };
  });
  if (pick === null) {
    const scripting = scriptingFor(site);
    return { scripting, rootScripting: scripting, staticFiles: createStaticStage(site) };
  }
  site.sendError = (req, res, status, options) => pick(req).sendError(req, res, status, options);
  const anyScripting = [...scriptingByRoot.values()].some(Boolean);
  return {
    rootScripting: scriptingFor(site),
    scripting: anyScripting ? function scripting(req, res, next) {
      const stage = pick(req).scripting;
      return stage === null ? next() : stage(req, res, next);
    } : null,
    staticFiles: function staticFiles(req, res, next) {
      return pick(req).staticFiles(req, res, next);
    },
  };
}

// `environmentVariables` (SVR.JS): set before mods and serverSideScript.js load, in every worker.
function applyEnvironment(config) {
  for (const [name, value] of Object.entries(config.environmentVariables || {})) process.env[name] = String(value);
}

// req.svr: the one per-request record the stages share (docs/architecture.md lists its fields),
// made here for every request a pipeline entry point takes. clientAddress starts as the peer's
// address; the clientAddress stage replaces it behind a trusted proxy.
// counters: the status page's request counts (status.js), or null when it is off.
function withRecord(run, counters) {
  return function handle(req, res) {
    if (counters !== null) counters.count(req, res);
    req.svr = { originalUrl: req.url, bodyBytes: undefined, user: null, clientAddress: req.socket.remoteAddress };
    run(req, res);
  };
}

module.exports = { createPipeline };
