'use strict';
// The request pipeline of a worker: an explicit list of stages, built once per config. Every
// request a worker's listeners receive enters it (docs/architecture.md has the list, what each
// stage answers and when it passes on).
//
//   createPipeline(config, { log, configFile, disableMods, isDraining, scrapeMetrics, rateLimiter, cacheIndex }) ->
//     { site, proxy, handle(req, res), httpsRedirect(req, res), prepare(), close() }
//     Throws one error listing every problem of every stage ("FILE: key: why", or the script's or
//     mod's own file). Building starts nothing: the worker awaits pipeline.prepare() before it
//     listens (a stage's async work before serving, today the proxy's health checks), and
//     close() stops that work when the pipeline is replaced.
//   checkPipeline(config, { configFile, disableMods }) -> [problem]
//     The same build, for `svr check` and the primary before it forks: the same stages, the same
//     compilers and the same problems, except that serverSideScript.js is compiled without
//     running, no mod is loaded (scripting/mod-keys.js loads them in a child process), the
//     environment is left alone and prepare() is never called.
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
const { createWwwRedirectStage } = require('./www-redirect');
const { createPostfixStage } = require('./postfixes');
const { createClientAddressStage } = require('./access/client-address');
const { createBlocklistStage } = require('./access/blocklist');
const { createAccessRulesStage } = require('./access/rules');
const { createRateLimitStage } = require('./access/rate-limits');
const { createScriptingStage, checkScriptingStage } = require('./scripting');
const { createStaticStage } = require('./static');
const { createStatusStage, createRequestCounters } = require('./status');
const { createHttpsRedirectStage } = require('./https-redirect');
const { createHealthMetricsStage } = require('./health-metrics');
const { createForwardProxyStage } = require('./forward-proxy');
const { createConnectStage } = require('./connect');
const { createAcmeChallengeStage } = require('./acme-challenge');

// The proxy stage (and the http/https agents, tls and crypto it brings) is loaded only for a config
// with `proxy` rules: most sites have none, and each worker would hold its code for nothing.
function createProxyStage(site, options) {
  const rules = site.config.proxy;
  return Array.isArray(rules) && rules.length > 0 ? require('./proxy').createProxyStage(site, options) : null;
}

// The gateway likewise, only for a config with `fastcgi` or `cgi` rules.
function createGatewayStage(site, options) {
  const { fastcgi, cgi } = site.config;
  const any = (rules) => Array.isArray(rules) && rules.length > 0;
  return any(fastcgi) || any(cgi) ? require('./gateway').createGatewayStage(site, options) : null;
}

// The response cache, one for the proxy and every gateway stage, only when a rule caches.
function createResponseCache(site, cacheIndex) {
  const { proxy, fastcgi } = site.config;
  const caches = (rules) => Array.isArray(rules) && rules.some((rule) => rule.cache);
  if (!cacheIndex || !(caches(proxy) || caches(fastcgi))) return null;
  return require('./cache').createResponseCache(site.config, { index: cacheIndex, log: site.log });
}

// isDraining(), scrapeMetrics(): the worker's, for the health and metrics paths.
// rateLimiter: the host's rate-limit counter ({ take(key, rate, burst) }), from the process that
// runs this pipeline (lib/process/rate-limits/); without it `rateLimits` are not applied.
// cacheIndex: the host's index of the proxy cache's files (lib/process/proxy-cache-index.js),
// from the process too; without it no rule caches.
// acmeAnswers: the worker's ACME challenge answers (acme/challenges.js), with ACME on.
function createPipeline(config, { log, configFile, disableMods = false, isDraining, scrapeMetrics, rateLimiter = null, cacheIndex = null, acmeAnswers = null } = {}) {
  applyEnvironment(config); // before mods and serverSideScript.js load
  const scripting = disableMods ? null : createScriptingStage;
  const { pipeline, problems } = buildPipeline(config, { log, configFile, scripting, isDraining, scrapeMetrics, rateLimiter, cacheIndex, acmeAnswers });
  if (problems.length > 0) {
    pipeline.close();
    throw Object.assign(new Error(problems.join('\n')), { code: 'ECONFIG' });
  }
  return pipeline;
}

function checkPipeline(config, { configFile, disableMods = false } = {}) {
  let built;
  try {
    built = buildPipeline(config, { configFile, scripting: disableMods ? null : checkScriptingStage });
  } catch (error) { // no site to build on (a web root that is not a directory, say)
    return describeProblem(error, configFile);
  }
  built.pipeline.close();
  return built.problems;
}

// Every stage is built through build(), even when an earlier one failed, so that every problem
// is reported at once. scripting: the scripting stage's factory (null: no mods, no script).
function buildPipeline(config, { log, configFile, scripting: scriptingFactory, isDraining, scrapeMetrics, rateLimiter = null, cacheIndex = null, acmeAnswers = null }) {
  const site = createSite(config, { log, configFile });
  site.sendError = createErrorPages(site);
  const problems = [];
  const build = (create, ...args) => {
    try {
      return create(...args);
    } catch (error) { // once, though a stage is in both lists
      for (const line of describeProblem(error, configFile)) if (!problems.includes(line)) problems.push(line);
      return null;
    }
  };
  const cache = build(createResponseCache, site, cacheIndex);
  const accessRules = build(createAccessRulesStage, site);
  const { scripting, gateway, staticFiles, rootScripting } = createRootStages(site, { scriptingFactory, build, cache, accessRules });
  const fail = (req, res, error) => site.sendError(req, res, 500, { error });
  const proxy = build(createProxyStage, site, { cache });
  const counters = config.allowStatus ? createRequestCounters() : null;
  const healthAndMetrics = build(createHealthMetricsStage, site, { isDraining, scrapeMetrics });
  const acmeChallenge = build(createAcmeChallengeStage, site, acmeAnswers);
  // What every request meets first, on the site's port and on the HTTPS-redirect port alike.
  const entryStages = () => [
    build(createServerHeadersStage, site),
    build(createStrictHeadStage, site),
    acmeChallenge,
    build(createClientAddressStage, site),
    build(createBlocklistStage, site),
    healthAndMetrics,
  ];
  const stages = [
    build(createForwardProxyStage, rootScripting && rootScripting.proxyRequest),
    ...entryStages(),
    build(createConnectStage, { modsConnect: (rootScripting && rootScripting.connect) || null, reverseProxy: proxy }),
    build(createSanitizeStage, site),
    build(createWwwRedirectStage, site),
    build(createPostfixStage, site),
    build(createRewriteStage, site),
    build(createPathHeadersStage, site),
    build(createHostHeadersStage, site),
    accessRules,
    build(createRateLimitStage, site, rateLimiter),
    proxy,
    scripting,
    gateway,
    build(createStatusStage, site, counters),
    staticFiles,
  ].filter(Boolean);
  const redirectStages = [
    ...entryStages(),
    build(createPathHeadersStage, site),
    build(createHostHeadersStage, site),
    build(createHttpsRedirectStage, site),
  ].filter(Boolean);
  const pipeline = {
    site,
    proxy, // null without `proxy` rules; its upstreamHealth() feeds the metrics
    handle: withRecord(runStages(stages, fail), counters),
    httpsRedirect: withRecord(runStages(redirectStages, fail), counters),
    prepare: async () => {
      for (const stage of stages) if (typeof stage.prepare === 'function') await stage.prepare();
    },
    close: () => {
      for (const stage of stages) if (typeof stage.close === 'function') stage.close();
    },
  };
  return { pipeline, problems };
}

// A stage's refusal as lines for the user: a script's or a mod's error names its own file; the
// others name a key of the config file ("rewriteMap[0].definingRegex: ..."), so the file goes first.
function describeProblem(error, configFile) {
  const lines = String(error && error.message !== undefined ? error.message : error).split('\n');
  if ((error && error.file) || !configFile) return lines;
  return lines.map((line) => `${configFile}: ${line}`);
}

// The stages that depend on the web root: the scripting stage (serverSideScript.js from the root),
// the gateway (scripts from the root) and the static stage. With virtual hosts there is one of each
// per web root (the static stage with its own error pages), and site.sendError answers with the
// request's own host's pages.
function createRootStages(site, { scriptingFactory, build, cache, accessRules }) {
  const scriptingByRoot = new Map(); // one scripting stage per root, whatever the listing switch
  const scriptingFor = (hostSite) => {
    if (scriptingFactory === null) return null;
    if (!scriptingByRoot.has(hostSite.root)) scriptingByRoot.set(hostSite.root, build(scriptingFactory, hostSite));
    return scriptingByRoot.get(hostSite.root);
  };
  const gatewayByRoot = new Map(); // one gateway (and its FastCGI connections) per root
  const gatewayFor = (hostSite) => {
    if (!gatewayByRoot.has(hostSite.root)) gatewayByRoot.set(hostSite.root, build(createGatewayStage, hostSite, { cache, accessRules }));
    return gatewayByRoot.get(hostSite.root);
  };
  const pick = createVirtualHosts(site, (hostSite) => {
    if (hostSite !== site) hostSite.sendError = createErrorPages(hostSite);
    return {
      root: hostSite.root, sendError: hostSite.sendError, staticFiles: createStaticStage(hostSite),
      scripting: scriptingFor(hostSite), gateway: gatewayFor(hostSite),
    };
  });
  if (pick === null) {
    const scripting = scriptingFor(site);
    return { scripting, gateway: gatewayFor(site), rootScripting: scripting, staticFiles: createStaticStage(site) };
  }
  site.sendError = (req, res, status, options) => pick(req).sendError(req, res, status, options);
  const anyScripting = [...scriptingByRoot.values()].some(Boolean);
  return {
    rootScripting: scriptingFor(site),
    scripting: anyScripting ? function scripting(req, res, next) {
      const stage = pick(req).scripting;
      return stage === null ? next() : stage(req, res, next);
    } : null,
    gateway: perRootGateway(pick, [...gatewayByRoot.values()].filter(Boolean)),
    staticFiles: function staticFiles(req, res, next) {
      return pick(req).staticFiles(req, res, next);
    },
  };
}

// The request's own root's gateway; null when no root has one.
function perRootGateway(pick, gateways) {
  if (gateways.length === 0) return null;
  function gateway(req, res, next) {
    const stage = pick(req).gateway;
    return stage === null ? next() : stage(req, res, next);
  }
  gateway.close = () => {
    for (const stage of gateways) stage.close();
  };
  return gateway;
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
    // Every field the stages set is here from the start: one object shape for every request.
    req.svr = {
      originalUrl: req.url, originalMethod: req.method, bodyBytes: undefined, user: null, clientAddress: req.socket.remoteAddress, internal: false,
      rateLimit: undefined, cache: undefined, cleanHref: undefined, cleanSearch: undefined, pathname: undefined, url: undefined, rewritten: false,
    };
    run(req, res);
  };
}

module.exports = { createPipeline, checkPipeline };
