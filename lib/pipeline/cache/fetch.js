'use strict';
// From the upstream into the cache: a request forwarded with hooks (the proxy's on the upstream
// seam, ../proxy/forward.js; the gateway's on a FastCGI request, ../gateway/index.js) that keep the response's body as it streams to the client (up to
// maxEntryBytes, and 8 times that for all the bodies of a worker) and store it when it ends,
// answer a revalidation's 304 from the stored entry, and let a stale entry stand in for a failed
// upstream (stale-if-error). The client's own If-Match / If-Unmodified-Since are evaluated against
// the response that comes (answer.js's check): when they fail the client gets 412 (with that
// response's Vary) and that response is not stored, so a miss answers as a hit of the same entry would.
//
//   createFetcher({ store, settings, inflight, uncacheable, log }) ->
//     uncacheable: { has, add, delete } the keys whose last GET answer could not be stored
//     { fetchAndStore(req, res, rule, ctx, forward, key, stale, status) -> Promise (settled once
//       the response is stored, or known not to be), refreshBehind(req, rule, ctx, forward, key, entry) }

const { PassThrough } = require('node:stream');
const { storable } = require('./policy');
const { answerFromEntry, markStatus, failsPrecondition, preconditionFailed, staleForMs } = require('./answer');

// Bodies of responses being stored are held in memory until they end: at most this many times
// maxEntryBytes in a worker (64 MiB by default; beyond, a response streams through unstored), so
// many large misses at once cannot fill its memory.
const BUFFERED_ENTRIES = 8;
// Headers of a stored response that belong to that one exchange, not to the cached entry.
const NOT_STORED = new Set(['set-cookie', 'age', 'x-cache', 'date', 'connection', 'keep-alive', 'transfer-encoding']);
// What the cache asks the upstream for is the whole current answer, checked only with its own
// validators: the client's conditions and Range are left out (undefined), as nginx's proxy_cache
// does. Forwarded, a client's `If-None-Match: *` drew a 304 that was taken for the revalidation
// of a stale copy without validators, and stored that old copy as fresh again for everyone.
const CLIENT_CONDITIONS = {
  'if-none-match': undefined, 'if-modified-since': undefined, 'if-match': undefined,
  'if-unmodified-since': undefined, 'if-range': undefined, range: undefined,
};

// The headers of svr's own request for a refresh: the client's conditions are not its own.
function withoutClientConditions(headers) {
  const own = { ...headers };
  for (const name of Object.keys(CLIENT_CONDITIONS)) delete own[name];
  return own;
}

function createFetcher({ store, settings, inflight, uncacheable, log }) {
  const bufferBudget = BUFFERED_ENTRIES * settings.maxEntryBytes;
  let buffered = 0; // bytes of bodies held for storing, in this worker

  // The response of a GET as it streams to the client, kept (up to maxEntryBytes) and stored.
  function storingTap(req, key, upRes, headers, settle) {
    const policy = req.method === 'GET' ? storable(upRes.statusCode, headers, settings) : { reason: 'HEAD' };
    if (policy.reason) {
      if (req.method === 'GET') uncacheable.add(key);
      settle();
      return null;
    }
    const chunks = [];
    let size = 0;
    let kept = true;
    const giveUp = () => {
      kept = false;
      chunks.length = 0;
      buffered -= size;
      settle();
    };
    return {
      data(chunk) {
        if (!kept) return;
        if (size + chunk.length > settings.maxEntryBytes || buffered + chunk.length > bufferBudget) return giveUp();
        size += chunk.length;
        buffered += chunk.length;
        chunks.push(chunk);
        return undefined;
      },
      end() {
        if (!kept) return;
        kept = false;
        buffered -= size;
        const stored = {};
        for (const [name, value] of Object.entries(headers)) if (!NOT_STORED.has(name)) stored[name] = value;
        const vary = String(headers.vary || '').split(',').map((name) => name.trim().toLowerCase()).filter(Boolean).sort();
        const meta = { status: upRes.statusCode, headers: stored, storedAt: Date.now(), upstreamAge: headers.age, vary, ...policy };
        uncacheable.delete(key);
        store.save(key, req, meta, Buffer.concat(chunks)).catch((error) => log.warn(`proxy cache: cannot store ${req.url}: ${error.message}`)).finally(settle);
      },
      abort() { if (kept) giveUp(); },
    };
  }

  // Forward to the upstream (revalidating `stale` when given) and store what may be stored.
  function fetchAndStore(req, res, rule, ctx, forward, key, stale, status) {
    let settle;
    const done = new Promise((resolve) => { settle = resolve; });
    if (!inflight.has(key)) {
      inflight.set(key, done);
      done.then(() => { if (inflight.get(key) === done) inflight.delete(key); });
    }
    const requestHeaders = { ...CLIENT_CONDITIONS };
    if (stale) {
      if (stale.meta.headers.etag !== undefined) requestHeaders['if-none-match'] = stale.meta.headers.etag;
      if (stale.meta.headers['last-modified'] !== undefined) requestHeaders['if-modified-since'] = stale.meta.headers['last-modified'];
    }
    forward(req, res, rule, ctx, {
      requestHeaders,
      onResponse(upRes, headers) {
        if (stale && upRes.statusCode === 304) {
          upRes.resume();
          const refreshed = { ...stale.meta.headers };
          for (const [name, value] of Object.entries(headers)) if (!NOT_STORED.has(name) && name !== 'content-length') refreshed[name] = value;
          const policy = storable(stale.meta.status, refreshed, settings);
          const meta = { ...stale.meta, headers: refreshed, storedAt: Date.now(), upstreamAge: headers.age, ...(policy.reason ? { lifetimeMs: 0 } : policy) };
          store.save(key, req, meta, stale.body).catch(() => {}).finally(settle);
          answerFromEntry(req, res, { meta, body: stale.body }, 'REVALIDATED', ctx.sendError);
          return 'handled';
        }
        markStatus(req, res, status);
        if (failsPrecondition(req, upRes.statusCode, headers)) {
          upRes.resume();
          settle(); // nothing stored: the next request fetches it again
          preconditionFailed(req, res, headers, ctx.sendError); // with its Vary, as from the entry
          return 'handled';
        }
        return storingTap(req, key, upRes, headers, settle);
      },
      onNoResponse: settle, // none to store: a script's local redirect, or the client went away first
      onFailure() {
        settle();
        if (res.background) return true; // a refresh behind a STALE answer: nobody to answer
        if (!stale) return false;
        if (staleForMs(stale, Date.now()) > (stale.meta.staleIfErrorMs || 0)) return false;
        answerFromEntry(req, res, stale, 'STALE', ctx.sendError);
        return true;
      },
    });
    return done;
  }

  // stale-while-revalidate: a GET of the same URL, made by svr, whose answer only goes to the cache.
  function refreshBehind(req, rule, ctx, forward, key, entry) {
    const sink = new PassThrough();
    sink.resume();
    const fake = Object.assign(sink, {
      background: true, headersSent: false, statusCode: 200,
      setHeader() {}, getHeader() {}, hasHeader() { return false; }, removeHeader() {},
      writeHead(status) { fake.statusCode = status; fake.headersSent = true; return fake; },
    });
    const background = { method: 'GET', url: req.url, headers: withoutClientConditions(req.headers), httpVersionMajor: 1, httpVersion: '1.1', socket: req.socket, svr: { cache: 'STALE' } };
    fetchAndStore(background, fake, rule, ctx, forward, key, entry, 'STALE');
  }

  return { fetchAndStore, refreshBehind };
}

module.exports = { createFetcher };
