'use strict';
// Answering from a stored entry, and the facts about an entry the cache asks each time.
//
//   answerFromEntry(req, res, entry, status, sendError)
//                                              the stored response, with Age and X-Cache; or the
//                                              304 or 412 (sendError's page) the client's
//                                              preconditions call for
//   markStatus(req, res, status)               X-Cache on a response the upstream answers
//   failsPrecondition(req, statusCode, headers) whether the client's If-Match / If-Unmodified-Since
//                                              fail against a response the upstream sent (412 due)
//   preconditionFailed(req, res, headers, sendError)
//                                              that 412, with the Vary of the response (headers)
//                                              it was computed against
//   isFresh(entry, now)                        within its lifetime (never for no-cache entries)
//   staleForMs(entry, now)                     how long past its lifetime

const { ageOf } = require('./policy');
const { parseDate, evaluatePreconditions } = require('../../http/conditional');
const { appendVary } = require('../../http/headers');

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

// A response's validators as http/conditional.js takes them (the static stage's check too).
function validatorsOf(headers) {
  return { etag: headers.etag === undefined ? null : headers.etag, mtime: parseDate(headers['last-modified']) };
}

// The client's preconditions against a response of this status and validators, in RFC 9110
// §13.2.2 order: 412, 304 or 0. Only a 2xx is a representation they can be about: any other
// answer is given as it is (§13.2.1).
function preconditionOf(req, statusCode, validators) {
  return statusCode >= 200 && statusCode < 300 ? evaluatePreconditions(req, validators) : 0;
}

function failsPrecondition(req, statusCode, headers) {
  return preconditionOf(req, statusCode, validatorsOf(headers)) === 412;
}

// The 412 (sendError's page) for a response with these headers. It carries that response's Vary,
// as the 304 does (RFC 9110 §12.5.5): the response was selected on those request headers, and a
// shared cache must not give its 412 to a request for another variant. Added to any Vary already
// set (sendError adds Accept).
function preconditionFailed(req, res, headers, sendError) {
  if (headers.vary !== undefined) {
    for (const name of String(headers.vary).split(',')) {
      const token = name.trim();
      if (token !== '') appendVary(res, token);
    }
  }
  return sendError(req, res, 412);
}

function answerFromEntry(req, res, entry, status, sendError) {
  req.svr.cache = status;
  if (entry.validators === undefined) entry.validators = validatorsOf(entry.meta.headers);
  const precondition = preconditionOf(req, entry.meta.status, entry.validators);
  if (precondition === 412) {
    markStatus(req, res, status);
    return preconditionFailed(req, res, entry.meta.headers, sendError);
  }
  const age = String(ageOf(entry.meta, Date.now()));
  if (precondition === 304) {
    res.writeHead(304, [...storedHeaders(entry), 'Age', age, 'X-Cache', status]);
    return res.end();
  }
  req.svr.bodyBytes = entry.body.length;
  const length = entry.meta.status === 204 ? [] : ['content-length', String(entry.body.length)];
  res.writeHead(entry.meta.status, [...storedHeaders(entry), 'Age', age, 'X-Cache', status, ...length]);
  return res.end(req.method === 'HEAD' ? undefined : entry.body);
}

module.exports = { answerFromEntry, markStatus, failsPrecondition, preconditionFailed, isFresh, staleForMs };
