'use strict';
// The request target: sanitizing, the origin form, and path/query splitting. Node built-ins only.
//
// sanitizeTarget(pathAndQuery) decodes the path once and normalises it:
//   - only printable ASCII is accepted in the request target (browsers percent-encode the rest);
//   - a `%` not followed by two hex digits, invalid or overlong UTF-8 (`%c0%af`), or a NUL byte
//     (`%00`) -> 400;
//   - `\` (raw or `%5c`) and `%2f` count as `/`; empty segments (`//`) and `.` segments are
//     dropped; `..` removes the previous segment; a `..` that would climb above the web root -> 403;
//   - the path is decoded exactly once: `%252e%252e` is a file literally named `%2e%2e`, never `..`.
// The result says whether the normalised path differs from what was sent (`changed`).
// originForm(url) and absoluteAuthority(url) take an absolute-form target apart.

// encodeURIComponent, but keep the characters RFC 3986 allows unencoded in a path segment.
function encodeSegment(s) {
  return encodeURIComponent(s).replace(/%(24|26|2B|2C|3B|3D|3A|40)/g, (m) => decodeURIComponent(m));
}

function encodePath(pathname) {
  return pathname.split('/').map(encodeSegment).join('/');
}

// "/a/b?x=1#f" -> { path: "/a/b", search: "?x=1" } (a fragment, never sent by browsers, is dropped)
function splitTarget(target) {
  const hash = target.indexOf('#');
  const rest = hash === -1 ? target : target.slice(0, hash);
  const q = rest.indexOf('?');
  return q === -1 ? { path: rest, search: '' } : { path: rest.slice(0, q), search: rest.slice(q) };
}

// Strips scheme and authority from an absolute-form target ("http://host/a?b" -> "/a?b",
// "http://host" -> "/"); any other target is returned as it is.
const ABSOLUTE_FORM = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/([^/?#]*)/;
function originForm(url) {
  const m = ABSOLUTE_FORM.exec(url);
  if (!m) return url;
  const rest = url.slice(m[0].length);
  return rest === '' || rest[0] !== '/' ? '/' + rest : rest;
}

// The authority of an absolute-form target as sent ("http://Host:81/a" -> "Host:81",
// "http:///a" -> ""), or null for any other target.
function absoluteAuthority(url) {
  const m = ABSOLUTE_FORM.exec(url);
  return m === null ? null : m[1];
}

function refuse(status, reason) {
  return { ok: false, status, reason };
}

// A path that needs no decoding and no normalising: "/" or "/"-separated segments of characters
// that are never encoded, no segment empty or starting with "." (so no "." or ".." either), at
// most one trailing "/". Most requests are like this; the full walk gives the same answer.
const CLEAN_PATH = /^(?:\/[A-Za-z0-9_~!$&'()*+,;=:@-][A-Za-z0-9_~!$&'()*+,;=:@.-]*)*\/?$/;
// What may follow "?" without a closer look: printable ASCII but "#" (a fragment is cut off).
const CLEAN_QUERY = /^[\x21\x22\x24-\x7e]*$/;

// The clean case's result, or null when the target needs the full walk.
function cleanTarget(target) {
  const q = target.indexOf('?');
  const rawPath = q === -1 ? target : target.slice(0, q);
  if (rawPath.length === 0 || !CLEAN_PATH.test(rawPath)) return null;
  const search = q === -1 ? '' : target.slice(q);
  if (search.length > 1 && !CLEAN_QUERY.test(search)) return null;
  return { ok: true, pathname: rawPath, href: rawPath, search, changed: false };
}

// target: origin-form request target ("/a/b?x=1"). Returns
// { ok: true, pathname, href, search, changed } or { ok: false, status, reason }.
function sanitizeTarget(target) {
  if (typeof target !== 'string' || target.length === 0) return refuse(400, 'empty request target');
  const clean = cleanTarget(target);
  return clean !== null ? clean : walkTarget(target);
}

// The full walk: every character checked, the path split, decoded and normalised.
function walkTarget(target) {
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return refuse(400, 'invalid character in the request target');
  }
  const { path: rawPath, search } = splitTarget(target);
  if (rawPath[0] !== '/') return refuse(400, 'the path does not start with /');
  if (/%(?![0-9a-fA-F]{2})/.test(rawPath)) return refuse(400, 'invalid percent-encoding');
  const walked = normaliseSegments(rawPath.split('/'));
  if (!walked.ok) return walked;
  const { stack, trailing, changed } = walked;
  const pathname = '/' + stack.join('/') + (trailing && stack.length > 0 ? '/' : '');
  const href = changed ? encodePath(pathname) : rawPath;
  return { ok: true, pathname, href, search, changed };
}

// The raw segments of a path (the first is the empty one before the leading '/'), decoded once and
// walked: returns { ok, stack, trailing, changed } or a refusal.
function normaliseSegments(rawSegments) {
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
      return refuse(400, 'invalid percent-encoding');
    }
    if (decoded.indexOf('\0') !== -1) return refuse(400, 'NUL byte in the path');
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
      } else if (piece === '.' || piece === '..') {
        changed = true;
        if (isLast) trailing = true;
        if (piece === '..') {
          if (stack.length === 0) return refuse(403, 'the path climbs above the web root');
          stack.pop();
        }
      } else {
        stack.push(piece);
      }
    }
  }
  return { ok: true, stack, trailing, changed };
}

module.exports = { sanitizeTarget, walkTarget, originForm, absoluteAuthority, splitTarget, encodePath, encodeSegment };
