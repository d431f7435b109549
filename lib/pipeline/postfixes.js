'use strict';
// Stage: SVR.JS's web-root postfixes (3.14+): virtual hosts as subdirectories of one web root.
//
//   wwwrootPostfixesVHost:       [{ host?, ip?, postfix, skipRegex? }], first match wins:
//                                "/a?q" becomes "/<postfix>/a?q"
//   wwwrootPostfixPrefixesVHost: ["/cgi-bin", ...]: a URL starting with one keeps it in front:
//                                "/cgi-bin/x" becomes "/cgi-bin/<postfix>/x"
// Runs after sanitizing and before the rewrite map (SVR.JS's order); a `skipRegex` matching the
// URL leaves it alone. The result is sanitized again: one that escapes the web root gets 403.

const { sanitizeTarget } = require('../http/target');
const { compileRegexString } = require('../config/regex-string');
const { compileVirtualHosts, firstMatch } = require('./site');

function createPostfixStage(site) {
  const entries = compileVirtualHosts(site.config.wwwrootPostfixesVHost).map(({ matches, entry }) => {
    const skip = typeof entry.skipRegex === 'string' ? compileRegexString(entry.skipRegex) : null;
    return { matches: (req) => matches(req) && !(skip !== null && (skip.lastIndex = 0, skip.test(req.url))), postfix: entry.postfix };
  });
  if (entries.length === 0) return null;
  const prefixes = site.config.wwwrootPostfixPrefixesVHost || [];

  // "/cgi-bin/x" -> ["/cgi-bin", "/x"]: a prefix ending in "/" always applies, otherwise only as a
  // whole segment ("/cgi-binx" keeps no prefix).
  function splitPrefix(url) {
    for (const prefix of prefixes) {
      if (!url.startsWith(prefix)) continue;
      const kept = prefix.replace(/\/+$/, '');
      const after = url[prefix.length];
      if (kept !== prefix || after === undefined || after === '?' || after === '/' || after === '#') {
        return [kept, url.slice(kept.length)];
      }
    }
    return ['', url];
  }

  const { sendError } = site;
  return function postfixes(req, res, next) {
    const i = firstMatch(entries, req);
    if (i === -1) return next();
    const [prefix, rest] = splitPrefix(req.url);
    const result = sanitizeTarget(`${prefix}/${entries[i].postfix}${rest.startsWith('/') ? rest : `/${rest}`}`);
    if (!result.ok) return sendError(req, res, 403);
    req.url = result.href + result.search;
    req.svr.pathname = result.pathname;
    req.svr.url = req.url;
    return next();
  };
}

module.exports = { createPostfixStage };
