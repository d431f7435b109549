'use strict';
// The request pipeline of a worker: an explicit list of stages, built once per config.
//
//   createPipeline(config, { log, configFile, disableMods }) ->
//     { handle(req, res), httpsRedirect(req, res), proxyRequest?(req, res), connect?(req, socket, head) }
//
// Every request runs these stages in order; each answers it or calls next() (docs/architecture.md):
//   serverHeaders   response-headers.js  Server + fixed customHeaders, first thing for every answer
//   sanitize        sanitize.js          414, 400, 403, OPTIONS *, 301 to the clean URL; fills req.svr
//   rewrite         rewrite.js           the rewrite map, first match wins, 403 on escape
//   pathHeaders     response-headers.js  customHeaders with {path}, filled after rewriting
//   scripting       scripting/           mods in name order, then serverSideScript.js
//   staticFiles     static/              files, directories, listings
// Errors from any stage, and every error status, are answered by error-pages.js (sendError).
// The plain port of an HTTPS site runs a shorter list: serverHeaders, pathHeaders, httpsRedirect.

const { createSite } = require('./site');
const { runStages } = require('./runner');
const { createErrorPages } = require('./error-pages');
const { createServerHeadersStage, createPathHeadersStage } = require('./response-headers');
const { createSanitizeStage } = require('./sanitize');
const { createRewriteStage } = require('./rewrite');
const { createScriptingStage } = require('./scripting');
const { createStaticStage } = require('./static');
const { createHttpsRedirectStage } = require('./https-redirect');

function createPipeline(config, { log, configFile, disableMods = false } = {}) {
  const site = createSite(config, { log, configFile });
  site.sendError = createErrorPages(site);
  const fail = (req, res, error) => site.sendError(req, res, 500, { error });
  const scripting = disableMods ? null : createScriptingStage(site);
  const stages = [
    createServerHeadersStage(site),
    createSanitizeStage(site),
    createRewriteStage(site),
    createPathHeadersStage(site),
    scripting,
    createStaticStage(site),
  ].filter(Boolean);
  const redirectStages = [
    createServerHeadersStage(site),
    createPathHeadersStage(site),
    createHttpsRedirectStage(site),
  ].filter(Boolean);
  return {
    site,
    handle: withRecord(runStages(stages, fail)),
    httpsRedirect: withRecord(runStages(redirectStages, fail)),
    // Forward-proxy requests and CONNECT, for the listeners: null unless a mod takes them.
    proxyRequest: (scripting && scripting.proxyRequest) || null,
    connect: (scripting && scripting.connect) || null,
  };
}

// req.svr: the one per-request record the stages share (docs/architecture.md lists its fields).
function withRecord(run) {
  return function handle(req, res) {
    req.svr = { originalUrl: req.url, bodyBytes: undefined, user: null };
    run(req, res);
  };
}

module.exports = { createPipeline };
