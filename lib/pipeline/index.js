'use strict';
// The request pipeline of a worker: an explicit list of stages, built once per config. Every
// request a worker's listeners receive enters it (docs/architecture.md has the list, what each
// stage answers and when it passes on).
//
//   createPipeline(config, { log, configFile, disableMods, isDraining, scrapeMetrics }) ->
//     { site, proxy, handle(req, res), httpsRedirect(req, res) }
//
// handle runs the site's list; httpsRedirect the plain port's of an HTTPS site. An HTTP/1 CONNECT
// or Upgrade comes with a response made for its socket (net/upgrade.js). Errors from any stage,
// and every error status, are answered by error-pages.js (sendError). With virtual hosts
// (virtual-hosts.js) the static stage and the error pages are built once per web root at load,
// and each request uses its own host's.

const { createSite } = require('./site');
const { runStages } = require('./runner');
const { createErrorPages } = require('./error-pages');
const { createServerHeadersStage, createPathHeadersStage, createHostHeadersStage } = require('./response-headers');
const { createVirtualHosts } = require('./virtual-hosts');
const { createSanitizeStage } = require('./sanitize');
const { createStrictHeadStage } = require('./strict-head');
const { createRewriteStage } = require('./rewrite');
const { createProxyStage } = require('./proxy');
const { createWwwRedirectStage } = require('./www-redirect');
const { createPostfixStage } = require('./postfixes');
const { createClientAddressStage } = require('./access/client-address');
const { createBlocklistStage } = require('./access/blocklist');
const { createAccessRulesStage } = require('./access/rules');
const { createScriptingStage } = require('./scripting');
const { createStaticStage } = require('./static');
const { createStatusStage, createRequestCounters } = require('./status');
const { createHttpsRedirectStage } = require('./https-redirect');
const { createHealthMetricsStage } = require('./health-metrics');
const { createForwardProxyStage } = require('./forward-proxy');
const { createConnectStage } = require('./connect');
const { createAcmeChallengeStage } = require('./acme-challenge');

// isDraining(), scrapeMetrics(): the worker's, for the health and metrics paths.
// acmeAnswers: the worker's ACME challenge answers (acme/challenges.js), with ACME on.
function createPipeline(config, { log, configFile, disableMods = false, isDraining, scrapeMetrics, acmeAnswers = null } = {}) {
  const site = createSite(config, { log, configFile });
  site.sendError = createErrorPages(site);
  applyEnvironment(config);
  const { scripting, staticFiles, rootScripting } = createRootStages(site, { disableMods });
  const fail = (req, res, error) => site.sendError(req, res, 500, { error });
  const proxy = createProxyStage(site);
  const counters = config.allowStatus ? createRequestCounters() : null;
  const healthAndMetrics = createHealthMetricsStage(site, { isDraining, scrapeMetrics });
  const acmeChallenge = createAcmeChallengeStage(site, acmeAnswers);
  const stages = [
    createForwardProxyStage(rootScripting && rootScripting.proxyRequest),
    createServerHeadersStage(site),
    createStrictHeadStage(site),
    acmeChallenge,
    createClientAddressStage(site),
    createBlocklistStage(site),
    healthAndMetrics,
    createConnectStage({ modsConnect: (rootScripting && rootScripting.connect) || null, reverseProxy: proxy }),
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
    acmeChallenge,
    createClientAddressStage(site),
    createBlocklistStage(site),
    healthAndMetrics,
    createPathHeadersStage(site),
    createHostHeadersStage(site),
    createHttpsRedirectStage(site),
  ].filter(Boolean);
  return {
    site,
    proxy, // null without `proxy` rules; its upstreamHealth() feeds the metrics
    handle: withRecord(runStages(stages, fail), counters),
    httpsRedirect: withRecord(runStages(redirectStages, fail), counters),
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
    req.svr = { originalUrl: req.url, bodyBytes: undefined, user: null, clientAddress: req.socket.remoteAddress, internal: false };
    run(req, res);
  };
}

module.exports = { createPipeline };
