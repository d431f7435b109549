'use strict';
// Stage 5: static files and directories. The last stage: it answers every request that reaches it.
//
//   method policy   GET and HEAD (and POST, answered as GET, with allowPostToStaticFiles);
//                   OPTIONS -> 204 + Allow; anything else -> 405 + Allow
//   path policy     URL path -> real path (../path-policy.js: dotfiles, protected paths,
//                   symlinks, containment); every refusal a 404
//   directory       301 to add the trailing slash, then index.html / index.htm / index.xhtml, a listing
//                   (listing.js, with enableDirectoryListing) or 403
//   respond.js      one path for a file: representation (.html pages wrapped in .head/.foot with
//                   enableIncludingHeadAndFootInHTML among them), preconditions, HEAD/Range, body

const fs = require('node:fs');
const { sanitizeTarget, encodePath } = require('../../http/target');
const { ALLOW, ALLOW_WITH_POST } = require('../../http/headers');
const { pathPolicyFor, errorStatus } = require('../path-policy');
const { createResponder } = require('./respond');

function createStaticStage(site) {
  const { config, sendError } = site;
  const trailingRedirect = !config.disableTrailingSlashRedirects;
  const listingEnabled = config.enableDirectoryListing;
  const allowPost = config.allowPostToStaticFiles === true;
  const allow = allowPost ? ALLOW_WITH_POST : ALLOW;
  const { resolve, indexFile, isHidden } = pathPolicyFor(site);
  const { respond } = createResponder(site, { isHidden });
  // listing.js is loaded only where listings are on: ~3 MiB less in each idle worker otherwise.
  const listDirectory = listingEnabled ? require('./listing').createListing(site, { isHidden }) : null;

  function answerStatus(req, res, status, error) {
    return sendError(req, res, status, { error: status === 500 ? error : undefined });
  }

  function answerMethod(req, res) {
    if (req.method === 'OPTIONS') return res.writeHead(204, { Allow: allow }).end();
    return sendError(req, res, 405, { headers: { Allow: allow } });
  }

  // The URL path to serve: the pipeline's, unless a script changed req.url after it was set.
  function currentTarget(req) {
    if (req.svr.url === req.url) return { ok: true, pathname: req.svr.pathname };
    return sanitizeTarget(req.url);
  }

  // The directory the path policy accepted, confirmed on an opened descriptor (site.webRoot):
  // a directory swapped for a link after the check is neither redirected to, indexed nor listed.
  // -> 0 when it is there, else the status to answer.
  function directoryStatus(real) {
    try {
      const opened = site.webRoot.openSync(real, { directory: true });
      if (opened === null) return 404;
      fs.closeSync(opened.fd);
      return 0;
    } catch (err) {
      return errorStatus(err);
    }
  }

  function serveDirectory(req, res, pathname, real) {
    const status = directoryStatus(real);
    if (status !== 0) return sendError(req, res, status);
    if (!pathname.endsWith('/')) {
      // Redirect to the URL the client sent (as SVR.JS does, so a rewritten path is not exposed)
      // plus '/', query kept. If that URL already ends in '/', serve instead of looping.
      const href = req.svr.cleanHref !== undefined ? req.svr.cleanHref : encodePath(pathname);
      if (trailingRedirect && !href.endsWith('/')) {
        return res.writeHead(301, { Location: href + '/' + (req.svr.cleanSearch || ''), 'Content-Length': 0 }).end();
      }
      pathname += '/';
    }
    const index = indexFile(pathname);
    if (index !== null) return index.status ? sendError(req, res, index.status) : respond(req, res, index);
    if (!listingEnabled) return sendError(req, res, 403);
    return listDirectory(req, res, pathname, real).catch((err) => answerStatus(req, res, errorStatus(err), err));
  }

  return function staticFiles(req, res) {
    if (req.method !== 'GET' && req.method !== 'HEAD' && !(allowPost && req.method === 'POST')) return answerMethod(req, res);
    const target = currentTarget(req);
    if (!target.ok) return sendError(req, res, target.status);
    const { pathname } = target;
    const found = resolve(pathname);
    if (found.status) return answerStatus(req, res, found.status, found.error);
    if (found.stats.isDirectory()) return serveDirectory(req, res, pathname, found.real);
    if (!found.stats.isFile() || pathname.endsWith('/')) return sendError(req, res, 404);
    return respond(req, res, found);
  };
}

module.exports = { createStaticStage };
