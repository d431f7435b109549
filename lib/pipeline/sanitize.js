'use strict';
// Stage 1: URL sanitizing (the rules are sanitizeTarget's, in http/target.js).
// Answers 414 (too long), 400 (malformed), 403 (climbs above the root), OPTIONS * (204), and a
// 301 to the clean URL when the path had to be normalised (or, with `rewriteDirtyURLs: true`,
// serves the clean URL internally). Fills the per-request record req.svr (docs/architecture.md).

const { sanitizeTarget, originForm, splitTarget } = require('../http/target');
const { ALLOW } = require('../http/headers');

function createSanitizeStage(site) {
  const { maxURLLength } = site.config;
  const dirty = site.config.rewriteDirtyURLs;
  const keepDoubleSlashes = site.config.allowDoubleSlashes;
  const { sendError } = site;

  return function sanitize(req, res, next) {
    const url = req.url || '';
    if (url.length > maxURLLength) return sendError(req, res, 414);
    if (url === '*') return answerAsterisk(req, res, sendError);
    const target = url[0] === '/' ? url : originForm(url); // origin form is the usual case
    const result = sanitizeTarget(target);
    if (!result.ok) return sendError(req, res, result.status);
    if (keepDoubleSlashes && result.changed) keepSlashes(result, target);
    const svr = req.svr;
    svr.cleanHref = result.href; // the clean URL as the client should see it (before any rewrite)
    svr.cleanSearch = result.search;
    svr.pathname = result.pathname; // decoded, normalised; what the static stage maps to a file
    svr.url = result.href + result.search; // req.url as the pipeline last set it
    svr.rewritten = false;
    if (result.changed && !dirty) {
      res.writeHead(301, { Location: svr.url, 'Content-Length': 0 });
      return res.end();
    }
    req.url = svr.url;
    return next();
  };
}

// allowDoubleSlashes (SVR.JS 3.14.4+): a URL whose only untidiness is repeated slashes inside the
// path ("/a//b", never a leading "//") is kept as it came, not redirected; it still maps to the
// file of its collapsed path. Changes result in place.
function keepSlashes(result, target) {
  const { path: rawPath } = splitTarget(target);
  if (rawPath.startsWith('//')) return;
  const collapsed = sanitizeTarget(rawPath.replace(/\/{2,}/g, '/'));
  if (!collapsed.ok || collapsed.changed) return; // something else needed cleaning too
  result.href = rawPath;
  result.changed = false;
}

// "OPTIONS * HTTP/1.1" asks about the server as a whole; any other method with "*" is malformed.
function answerAsterisk(req, res, sendError) {
  if (req.method !== 'OPTIONS') return sendError(req, res, 400);
  res.writeHead(204, { Allow: ALLOW });
  return res.end();
}

module.exports = { createSanitizeStage };
