'use strict';
// Stage 2: the rewrite map (SVR.JS format), compiled once when the pipeline is built.
//
// Entry: { definingRegex: "/pattern/flags", replacements: [{ regex, replacement }], host?,
//          isNotFile?, isNotDirectory?, append?, allowDoubleSlashes? }
// - Input is req.url (clean path + query) after sanitizing.
// - Entries are tried in order; the first that matches wins; at most one rewrite per request.
// - Match = host matches (exact, "*", or "*.domain" which also matches "domain"; compared with the
//   Host header lowercased, without its port unless the rule names a port) AND definingRegex
//   matches AND not (isNotFile and the path is an existing file) AND not (isNotDirectory and the
//   path is an existing directory).
// - Then every replacement applies in order (`url.replace(regex, replacement)`, `$1` etc. work),
//   then `append` is concatenated.
// - The result is sanitized again; a result that is malformed or climbs above the web root is
//   refused with 403. Dot segments and `//` in the result are normalised silently.

const fs = require('fs');
const path = require('path');
const { sanitizeTarget } = require('./sanitize');
const { compileRegexString } = require('../config/regex-string');

function compileHost(host) {
  if (host === undefined || host === null || host === '*') return null;
  const h = String(host).toLowerCase();
  const withPort = h.includes(':') && !h.startsWith('[');
  if (h.startsWith('*.')) {
    const domain = h.slice(2);
    return { withPort, test: (v) => v === domain || v.endsWith('.' + domain) };
  }
  return { withPort, test: (v) => v === h };
}

function hostValue(req, withPort) {
  let h = String((req.headers && (req.headers.host || req.headers[':authority'])) || '').toLowerCase();
  if (!withPort) {
    if (h.startsWith('[')) {
      const end = h.indexOf(']');
      h = end === -1 ? h : h.slice(0, end + 1);
    } else {
      const colon = h.indexOf(':');
      if (colon !== -1) h = h.slice(0, colon);
    }
  }
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

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
      host: compileHost(entry.host),
      isNotFile: entry.isNotFile === true,
      isNotDirectory: entry.isNotDirectory === true,
      append: typeof entry.append === 'string' ? entry.append : '',
      allowDoubleSlashes: entry.allowDoubleSlashes === true,
    });
  });
  return { rules, errors };
}

function statKind(file) {
  return new Promise((resolve) => {
    fs.stat(file, (err, st) => {
      if (err) resolve(null);
      else resolve(st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other');
    });
  });
}

function createRewriter(config, { sendError }) {
  const { rules, errors } = compileRewriteMap(config.rewriteMap);
  if (errors.length) {
    const err = new Error(errors.join('\n'));
    err.configErrors = errors;
    throw err;
  }
  if (rules.length === 0) return null;
  const root = config.wwwroot;

  // Resolves true when the request goes on, false when it was answered (403).
  return async function rewrite(req, res) {
    const url = req.url;
    let kind; // stat of the current path, looked up at most once and only if a rule needs it
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i];
      if (rule.host && !rule.host.test(hostValue(req, rule.host.withPort))) continue;
      let input = url;
      if (!rule.allowDoubleSlashes) {
        // the path is already collapsed by sanitizing; collapse the path part only, never the query
        const q = input.indexOf('?');
        const p = q === -1 ? input : input.slice(0, q);
        if (p.indexOf('//') !== -1) input = p.replace(/\/{2,}/g, '/') + (q === -1 ? '' : input.slice(q));
      }
      rule.defining.lastIndex = 0;
      if (!rule.defining.test(input)) continue;
      if (rule.isNotFile || rule.isNotDirectory) {
        if (kind === undefined) kind = await statKind(path.join(root, req.svr.pathname));
        if (rule.isNotFile && kind === 'file') continue;
        if (rule.isNotDirectory && kind === 'directory') continue;
      }
      let out = input;
      for (const r of rule.replacements) {
        r.regex.lastIndex = 0;
        out = out.replace(r.regex, r.replacement);
      }
      out += rule.append;
      if (out[0] !== '/') out = '/' + out;
      const result = sanitizeTarget(out);
      if (!result.ok) {
        sendError(req, res, 403);
        return false;
      }
      req.url = result.href + result.search;
      req.svr.pathname = result.pathname;
      req.svr.url = req.url;
      req.svr.rewritten = true;
      return true;
    }
    return true;
  };
}

module.exports = { compileRewriteMap, createRewriter, compileHost };
