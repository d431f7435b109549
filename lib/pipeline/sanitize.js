'use strict';
// Stage 1: URL sanitizing.
//
// sanitizeTarget(pathAndQuery) decodes the path once and normalises it:
//   - only printable ASCII is accepted in the request target (browsers percent-encode the rest);
//   - a `%` not followed by two hex digits, invalid or overlong UTF-8 (`%c0%af`), or a NUL byte
//     (`%00`) -> 400;
//   - `\` (raw or `%5c`) and `%2f` count as `/`; empty segments (`//`) and `.` segments are
//     dropped; `..` removes the previous segment; a `..` that would climb above the web root -> 403;
//   - the path is decoded exactly once: `%252e%252e` is a file literally named `%2e%2e`, never `..`.
// The result says whether the normalised path differs from what was sent (`changed`). The stage
// answers such requests with a 301 to the clean URL (query kept), or with `rewriteDirtyURLs: true`
// serves them internally as if the clean URL had been requested.

const ALLOW = 'GET, HEAD, OPTIONS';

// encodeURIComponent, but keep the characters RFC 3986 allows unencoded in a path segment.
function encodeSegment(s) {
  return encodeURIComponent(s).replace(/%(24|26|2B|2C|3B|3D|3A|40)/g, (m) => decodeURIComponent(m));
}

function encodePath(pathname) {
  return pathname.split('/').map(encodeSegment).join('/');
}

function fail(status, reason) {
  return { ok: false, status, reason };
}

// pathAndQuery: origin-form request target ("/a/b?x=1"). Returns
// { ok: true, pathname, href, search, changed } or { ok: false, status, reason }.
function sanitizeTarget(target) {
  if (typeof target !== 'string' || target.length === 0) return fail(400, 'empty request target');
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return fail(400, 'invalid character in the request target');
  }
  let rest = target;
  const hash = rest.indexOf('#');
  if (hash !== -1) rest = rest.slice(0, hash);
  const q = rest.indexOf('?');
  const rawPath = q === -1 ? rest : rest.slice(0, q);
  const search = q === -1 ? '' : rest.slice(q);
  if (rawPath[0] !== '/') return fail(400, 'the path does not start with /');
  if (/%(?![0-9a-fA-F]{2})/.test(rawPath)) return fail(400, 'invalid percent-encoding');

  const rawSegments = rawPath.split('/');
  const stack = [];
  let changed = false;
  let trailing = false;
  for (let i = 1; i < rawSegments.length; i++) {
    const raw = rawSegments[i];
    const last = i === rawSegments.length - 1;
    let decoded;
    try {
      decoded = raw.indexOf('%') === -1 ? raw : decodeURIComponent(raw);
    } catch (err) {
      return fail(400, 'invalid percent-encoding');
    }
    if (decoded.indexOf('\0') !== -1) return fail(400, 'NUL byte in the path');
    let pieces = [decoded];
    if (decoded.indexOf('/') !== -1 || decoded.indexOf('\\') !== -1) {
      pieces = decoded.split(/[/\\]/);
      changed = true;
    }
    for (let j = 0; j < pieces.length; j++) {
      const piece = pieces[j];
      const isLast = last && j === pieces.length - 1;
      if (piece === '') {
        if (isLast) trailing = true;
        else changed = true;
      } else if (piece === '.') {
        changed = true;
        if (isLast) trailing = true;
      } else if (piece === '..') {
        changed = true;
        if (stack.length === 0) return fail(403, 'the path climbs above the web root');
        stack.pop();
        if (isLast) trailing = true;
      } else {
        stack.push(piece);
      }
    }
  }
  const pathname = '/' + stack.join('/') + (trailing && stack.length > 0 ? '/' : '');
  const href = changed ? encodePath(pathname) : rawPath;
  return { ok: true, pathname, href, search, changed };
}

// Strip scheme and authority from an absolute-form target ("http://host/a?b" -> "/a?b").
function originForm(url) {
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/.exec(url);
  if (!m) return url;
  const rest = url.slice(m[0].length);
  return rest === '' || rest[0] !== '/' ? '/' + rest : rest;
}

function createSanitizer(config, { sendError }) {
  const maxURLLength = Number.isInteger(config.maxURLLength) ? config.maxURLLength : 8192;
  const dirty = config.rewriteDirtyURLs === true;

  // Returns true when the request goes on to the next stage.
  return function sanitize(req, res) {
    const url = req.url || '';
    if (url.length > maxURLLength) {
      sendError(req, res, 414);
      return false;
    }
    if (url === '*') {
      if (req.method === 'OPTIONS') {
        res.writeHead(204, { Allow: ALLOW });
        res.end();
      } else {
        sendError(req, res, 400);
      }
      return false;
    }
    const result = sanitizeTarget(originForm(url));
    if (!result.ok) {
      sendError(req, res, result.status);
      return false;
    }
    req.svr = {
      originalUrl: url,
      // the clean URL as the client should see it (before any rewrite)
      cleanHref: result.href,
      cleanSearch: result.search,
      pathname: result.pathname, // decoded, normalised; what the static stage maps to a file
      url: result.href + result.search, // req.url as the pipeline last set it
      rewritten: false,
    };
    if (result.changed && !dirty) {
      res.writeHead(301, { Location: result.href + result.search, 'Content-Length': 0 });
      res.end();
      return false;
    }
    req.url = req.svr.url;
    return true;
  };
}

module.exports = { sanitizeTarget, createSanitizer, encodePath, encodeSegment, originForm, ALLOW };
