'use strict';
// Stage 2: the rewrite map (SVR.JS format), compiled once when the pipeline is built.
//
// Entry: { definingRegex: "/pattern/flags", replacements: [{ regex, replacement }], host?,
//          isNotFile?, isNotDirectory?, append?, allowDoubleSlashes? }
// - Input is req.url (clean path + query) after sanitizing.
// - Entries are tried in order; the first that matches wins; at most one rewrite per request.
// - Match = ip (when given) is the local address the connection came in on AND host matches (exact, "*", or "*.domain" which also matches "domain"; compared with the
//   Host header lowercased, without its port unless the rule names a port) AND definingRegex
//   matches AND not (isNotFile and the path is an existing file) AND not (isNotDirectory and the
//   path is an existing directory).
// - Then every replacement applies in order (`url.replace(regex, replacement)`, `$1` etc. work),
//   then `append` is concatenated.
// - The result is sanitized again; a result that is malformed or climbs above the web root is
//   refused with 403. Dot segments and `//` in the result are normalised silently.

const fs = require('fs');
const path = require('path');
const { sanitizeTarget, splitTarget } = require('../http/target');
const { compileHostPattern } = require('../http/host');
const { compileAddressList } = require('../http/address-list');
const { compileRegexString } = require('../config/regex-string');

// Returns { rules, errors }; errors name the key path.
function compileRewriteMap(rewriteMap) {
  const rules = [];
  const errors = [];
  (rewriteMap || []).forEach((entry, i) => {
    const at = `rewriteMap[${i}]`;
    if (!entry || typeof entry !== 'object') {
      errors.push(`${at}: expected an object`);
      return;
    }
    let defining;
    try {
      defining = compileRegexString(entry.definingRegex);
    } catch (err) {
      errors.push(`${at}.definingRegex: ${err.message}`);
      return;
    }
    const replacements = [];
    (entry.replacements || []).forEach((r, j) => {
      try {
        replacements.push({
          regex: compileRegexString(r && r.regex),
          replacement: r && typeof r.replacement === 'string' ? r.replacement : '',
        });
      } catch (err) {
        errors.push(`${at}.replacements[${j}].regex: ${err.message}`);
      }
    });
    rules.push({
      defining,
      replacements,
      host: compileHostPattern(entry.host),
      local: entry.ip ? compileAddressList([entry.ip], 'ip') : null, // the server address it came in on
      isNotFile: entry.isNotFile === true,
      isNotDirectory: entry.isNotDirectory === true,
      append: typeof entry.append === 'string' ? entry.append : '',
      allowDoubleSlashes: entry.allowDoubleSlashes === true,
    });
  });
  return { rules, errors };
}

// The path's kind, looked up only when a rule asks (isNotFile / isNotDirectory).
function statKind(file) {
  return new Promise((resolve) => {
    fs.stat(file, (err, st) => {
      if (err) resolve(null);
      else resolve(st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other');
    });
  });
}

// The rules were validated with the config ("svr-regex" in the schema), so compiling cannot fail
// here; if it ever did, the worker refuses to start with the key path.
function createRewriteStage(site) {
  const { rules, errors } = compileRewriteMap(site.config.rewriteMap);
  if (errors.length) throw new Error(errors.join('\n'));
  if (rules.length === 0) return null;
  const { sendError } = site;
  const rootFor = site.rootFor || (() => site.root); // the request's own web root (virtual hosts)

  return async function rewrite(req, res, next) {
    const url = req.url;
    let kind; // stat of the current path, looked up at most once and only if a rule needs it
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i];
      if (rule.host !== null && !rule.host(req)) continue;
      if (rule.local !== null && !rule.local.has(req.socket && req.socket.localAddress)) continue;
      const input = rule.allowDoubleSlashes ? url : collapseSlashes(url);
      rule.defining.lastIndex = 0;
      if (!rule.defining.test(input)) continue;
      if (rule.isNotFile || rule.isNotDirectory) {
        if (kind === undefined) kind = await statKind(path.join(rootFor(req), req.svr.pathname));
        if (rule.isNotFile && kind === 'file') continue;
        if (rule.isNotDirectory && kind === 'directory') continue;
      }
      const result = sanitizeTarget(applyRule(rule, input));
      if (!result.ok) return sendError(req, res, 403); // malformed, or climbs above the root
      req.url = result.href + result.search;
      req.svr.pathname = result.pathname;
      req.svr.url = req.url;
      req.svr.rewritten = true;
      return next();
    }
    return next();
  };
}

// The path is already collapsed by sanitizing; this collapses the path part only, never the query.
function collapseSlashes(url) {
  const { path: p, search } = splitTarget(url);
  return p.indexOf('//') === -1 ? url : p.replace(/\/{2,}/g, '/') + search;
}

function applyRule(rule, input) {
  let out = input;
  for (const r of rule.replacements) {
    r.regex.lastIndex = 0;
    out = out.replace(r.regex, r.replacement);
  }
  out += rule.append;
  return out[0] === '/' ? out : '/' + out;
}

module.exports = { compileRewriteMap, createRewriteStage };
