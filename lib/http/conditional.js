'use strict';
// Validators, conditional requests and byte ranges (RFC 9110 §8.8, §13, §14). Node built-ins only.
// The static stage (pipeline/static/respond.js) calls these once per response, for the
// representation it chose; the response cache (pipeline/cache/answer.js) evaluates the same
// preconditions against a stored or fetched response.

// Quoted strong ETag from the file's identity and times: no file read, and it changes whenever
// the file does — including a same-size file renamed over it with its mtime kept (rsync -t,
// cp -p; a new inode) or rewritten in place with its mtime set back (ctime moves regardless).
function makeETag(stats) {
  const hex = (n) => Math.floor(n).toString(16);
  return `"${hex(stats.ino)}-${hex(stats.size)}-${hex(stats.mtimeMs)}-${hex(stats.ctimeMs)}"`;
}

function parseDate(value) {
  if (typeof value !== 'string') return NaN;
  const t = Date.parse(value);
  return Number.isFinite(t) ? Math.floor(t / 1000) : NaN;
}

const TAG = /\s*(\*|(?:W\/)?"[^"]*")\s*(?:,|$)/y;

// Returns an array of entity tags ("*", "\"x\"", "W/\"x\"") or null when the header is malformed.
function parseTagList(value) {
  const tags = [];
  TAG.lastIndex = 0;
  let s = String(value).trim();
  if (s === '') return null;
  while (TAG.lastIndex < s.length) {
    const start = TAG.lastIndex;
    const m = TAG.exec(s);
    if (!m || TAG.lastIndex === start) return null;
    tags.push(m[1]);
  }
  return tags;
}

const opaque = (tag) => (tag.startsWith('W/') ? tag.slice(2) : tag);

function weakMatch(list, etag) {
  if (!etag) return false;
  const mine = opaque(etag);
  return list.some((t) => t !== '*' && opaque(t) === mine);
}

function strongMatch(list, etag) {
  if (!etag || etag.startsWith('W/')) return false;
  return list.some((t) => t === etag);
}

// Preconditions in RFC 9110 §13.2.2 order. validators = { etag|null, mtime (seconds) }.
// Returns 412, 304 or 0 (go on).
function evaluatePreconditions(req, validators) {
  const h = req.headers;
  const safe = req.method === 'GET' || req.method === 'HEAD';
  const { etag, mtime } = validators;
  if (h['if-match'] !== undefined) {
    const list = parseTagList(h['if-match']);
    if (!list) return 412;
    if (!list.includes('*') && !strongMatch(list, etag)) return 412;
  } else if (h['if-unmodified-since'] !== undefined) {
    const since = parseDate(h['if-unmodified-since']);
    if (!Number.isNaN(since) && mtime > since) return 412;
  }
  if (h['if-none-match'] !== undefined) {
    // The usual revalidation sends the tag back as it got it: a match without parsing the list.
    if (etag && h['if-none-match'] === etag) return safe ? 304 : 412;
    const list = parseTagList(h['if-none-match']);
    if (list && (list.includes('*') || weakMatch(list, etag))) return safe ? 304 : 412;
  } else if (safe && h['if-modified-since'] !== undefined) {
    const since = parseDate(h['if-modified-since']);
    if (!Number.isNaN(since) && mtime <= since) return 304;
  }
  return 0;
}

// If-Range: the Range applies only if the validator still matches (strong comparison).
function ifRangeMatches(value, validators) {
  if (value === undefined) return true;
  const v = String(value).trim();
  if (v.startsWith('W/')) return false;
  if (v.startsWith('"')) return !!validators.etag && v === validators.etag;
  const date = parseDate(v);
  return !Number.isNaN(date) && date === validators.mtime;
}

// `bytes = first - last`, each number optional, whitespace around every part. Each number and the
// whitespace after it form one optional group: written as `\s*(\d*)\s*`, the two `\s*` around an
// empty `(\d*)` could split a run of n spaces in n ways, each tried to the end, and a header of
// 16,000 spaces before an `x` took 200 ms to refuse (quadratic). This form accepts the same
// strings and gives each space one place, so a value is refused in one pass.
const BYTE_RANGE = /^\s*bytes\s*=\s*(?:(\d+)\s*)?-\s*(?:(\d+)\s*)?$/i;

// Single byte range only. Returns null (ignore the header: malformed, multiple ranges, other unit),
// { unsatisfiable: true }, or { start, end } (inclusive).
function parseRange(value, size) {
  if (typeof value !== 'string') return null;
  const m = BYTE_RANGE.exec(value);
  if (!m) return null;
  const [a = '', b = ''] = m.slice(1);
  if (a === '' && b === '') return null;
  if (a === '') {
    const n = Number(b);
    if (!Number.isSafeInteger(n)) return null;
    if (n === 0) return { unsatisfiable: true };
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(a);
  if (!Number.isSafeInteger(start)) return null;
  let end = b === '' ? Infinity : Number(b);
  if (!Number.isSafeInteger(end) && end !== Infinity) end = Infinity;
  if (end < start) return null;
  if (start >= size) return { unsatisfiable: true };
  return { start, end: Math.min(end, size - 1) };
}

module.exports = { makeETag, parseDate, parseTagList, evaluatePreconditions, ifRangeMatches, parseRange };
