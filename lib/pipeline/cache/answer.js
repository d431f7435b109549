'use strict';
// Answering from a stored entry, and the facts about an entry the cache asks each time.
//
//   answerFromEntry(req, res, entry, status)   the stored response, with Age and X-Cache (a 304
//                                              when the client's If-None-Match names its ETag)
//   markStatus(req, res, status)               X-Cache on a response the upstream answers
//   isFresh(entry, now)                        within its lifetime (never for no-cache entries)
//   staleForMs(entry, now)                     how long past its lifetime

const { ageOf } = require('./policy');

function markStatus(req, res, status) {
  req.svr.cache = status;
  if (!res.headersSent) res.setHeader('X-Cache', status);
}

function isFresh(entry, now) {
  return !entry.meta.revalidateAlways && now < entry.meta.storedAt + entry.meta.lifetimeMs;
}

function staleForMs(entry, now) {
  return now - entry.meta.storedAt - entry.meta.lifetimeMs;
}

// The stored headers as one flat list for writeHead, made once per entry (svr's Server stands).
function storedHeaders(entry) {
  if (entry.flatHeaders === undefined) {
    entry.flatHeaders = Object.entries(entry.meta.headers).filter(([name]) => name !== 'server' && name !== 'content-length').flat();
  }
  return entry.flatHeaders;
}

function answerFromEntry(req, res, entry, status) {
  req.svr.cache = status;
  const age = String(ageOf(entry.meta, Date.now()));
  const etag = entry.meta.headers.etag;
  const validator = req.headers['if-none-match'];
  if (etag !== undefined && validator !== undefined && validator.split(',').some((tag) => tag.trim() === etag)) {
    res.writeHead(304, [...storedHeaders(entry), 'Age', age, 'X-Cache', status]);
    return res.end();
  }
  req.svr.bodyBytes = entry.body.length;
  const length = entry.meta.status === 204 ? [] : ['content-length', String(entry.body.length)];
  res.writeHead(entry.meta.status, [...storedHeaders(entry), 'Age', age, 'X-Cache', status, ...length]);
  return res.end(req.method === 'HEAD' ? undefined : entry.body);
}

module.exports = { answerFromEntry, markStatus, isFresh, staleForMs };
