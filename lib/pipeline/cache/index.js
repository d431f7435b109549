'use strict';
// The response cache, for `proxy` and `fastcgi` rules with `"cache": true`
// (docs/limits-and-caching.md). One per pipeline: the proxy stage and every gateway stage share
// its store, its memory and its locks.
//
//   createResponseCache(config, { index, log }) -> { handle(req, res, rule, ctx, forward), purge(req, res, rule, ctx) }
//     built by ../index.js only when a proxy or fastcgi rule has `cache`
//     rule: { prefix, kind? ('fastcgi'; a proxy rule has none) }: part of the key
//     ctx: { isTrusted(address), sendError(req, res, status) }
//     forward(req, res, rule, ctx, hooks): the stage's way to its upstream, with the hooks
//       fetch.js gives it (requestHeaders, onResponse, onFailure, onNoResponse)
//
// For each request of a caching rule: a request the cache must not see (policy.js) is forwarded
// as it is (X-Cache: BYPASS). Otherwise its key (the rule, scheme, host, path and query, and
// the forwarding headers a trusted proxy sent) is looked up (disk-store.js):
//   HIT          fresh: answered from the cache, the upstream is not asked
//   STALE        stale within stale-while-revalidate: answered from the cache, refreshed behind
//   REVALIDATED  stale with a validator: the upstream answered 304 to If-None-Match /
//                If-Modified-Since, so the stored body is answered with the new headers
//   EXPIRED      stale: the upstream sent a new response, answered and stored
//   MISS         not stored: forwarded, and stored if the response may be (policy.js)
// A stale entry is also answered (STALE) when the upstream fails and stale-if-error allows it.
// Each answer from an entry, and each response fetched for the cache, first meets the client's
// preconditions (answer.js): If-Match / If-Unmodified-Since that fail get 412 (and a fetched
// response is then not stored); on an entry, If-None-Match / If-Modified-Since that match get 304.
// Concurrent misses of one key make one upstream request for the host: in a worker the first one
// asks the primary for the key's lock (index.lock) and the others wait for it; a worker whose
// lock comes back 'released' (another worker fetched) reads what that one stored, and forwards
// only when nothing could be stored.
// PURGE of a URL, from an address in proxyCache.purgeFrom, removes its entries (every variant).
// Parts: policy.js (what may be stored and served), disk-store.js (the files the workers share,
// and each worker's memory of them), fetch.js (from the upstream into the cache), answer.js
// (answering from an entry).

const { bypassReason } = require('./policy');
const { createDiskStore } = require('./disk-store');
const { createFetcher } = require('./fetch');
const { answerFromEntry, markStatus, isFresh, staleForMs } = require('./answer');
const { compileAddressList } = require('../../http/address-list');
const { proxyCacheDirectory } = require('../../product');
const { plainAddress } = require('../../http/trusted-proxies');

// Keys whose last answer could not be stored, remembered per worker (as Varnish's hit-for-miss):
// without this, concurrent requests for a page that is never stored would each wait for the
// one before it under the lock. At most this many (the oldest go first).
const MAX_UNCACHEABLE_KEYS = 10000;

function createRecentKeys(max) {
  const keys = new Set();
  return {
    has: (key) => keys.has(key),
    add(key) {
      if (keys.has(key)) return;
      if (keys.size >= max) keys.delete(keys.values().next().value);
      keys.add(key);
    },
    delete: (key) => keys.delete(key),
  };
}

function createResponseCache(config, { index, log }) {
  const settings = config.proxyCache;
  const store = createDiskStore({ directory: proxyCacheDirectory(config), memoryBytes: settings.memoryBytes, index });
  index.onForget(store.forget); // purges and evictions anywhere in the host
  const purgers = compileAddressList(settings.purgeFrom, 'proxyCache.purgeFrom');
  const inflight = new Map(); // key -> Promise settled when that fetch is stored or not
  const uncacheable = createRecentKeys(MAX_UNCACHEABLE_KEYS);
  const { fetchAndStore, refreshBehind } = createFetcher({ store, settings, inflight, uncacheable, log });

  function keyOf(req, rule, ctx) {
    const host = String(req.headers.host || req.headers[':authority'] || '').toLowerCase();
    const scheme = req.socket && req.socket.encrypted ? 'https' : 'http';
    let key = `${rule.kind || 'proxy'} ${rule.prefix}\n${scheme}://${host}${req.url}`;
    if (ctx.isTrusted(plainAddress(req.socket.remoteAddress))) {
      key += `\n${req.headers['x-forwarded-host'] || ''}\n${req.headers['x-forwarded-proto'] || ''}`;
    }
    return key;
  }

  // A fresh entry in this worker's memory is answered at once, without a promise; the rest
  // (the disk, the upstream) in lookUp().
  function handle(req, res, rule, ctx, forward) {
    const reason = bypassReason(req);
    if (reason !== null) {
      markStatus(req, res, 'BYPASS');
      return forward(req, res, rule, ctx);
    }
    const key = keyOf(req, rule, ctx);
    const held = store.lookupMemory(key, req);
    if (held !== null && isFresh(held, Date.now())) return answerFromEntry(req, res, held, 'HIT', ctx.sendError);
    // Its last answer could not be stored (no lifetime, Set-Cookie, private): no lock, no wait
    // behind another request; fetched, and stored should it now be storable.
    if (uncacheable.has(key)) return fetchAndStore(req, res, rule, ctx, forward, key, null, 'MISS');
    return lookUp(req, res, rule, ctx, forward, key);
  }

  async function lookUp(req, res, rule, ctx, forward, key) {
    let entry = await store.lookup(key, req);
    if (entry === null && inflight.has(key)) { // another request of this worker is fetching it
      await inflight.get(key);
      entry = await store.lookup(key, req);
    }
    const now = Date.now();
    if (entry === null) return miss(req, res, rule, ctx, forward, key);
    if (isFresh(entry, now)) return answerFromEntry(req, res, entry, 'HIT', ctx.sendError);
    if (!entry.meta.revalidateAlways && staleForMs(entry, now) <= (entry.meta.staleWhileRevalidateMs || 0)) {
      answerFromEntry(req, res, entry, 'STALE', ctx.sendError);
      if (!inflight.has(key)) refreshBehind(req, rule, ctx, forward, key, entry);
      return undefined;
    }
    return fetchAndStore(req, res, rule, ctx, forward, key, entry, 'EXPIRED');
  }

  async function miss(req, res, rule, ctx, forward, key) {
    let release;
    const waiting = new Promise((resolve) => { release = resolve; });
    inflight.set(key, waiting);
    waiting.then(() => { if (inflight.get(key) === waiting) inflight.delete(key); });
    const folder = store.folderOf(key);
    if (await index.lock(folder) === 'released') {
      release();
      const entry = await store.lookup(key, req);
      if (entry !== null && isFresh(entry, Date.now())) return answerFromEntry(req, res, entry, 'HIT', ctx.sendError);
      return fetchAndStore(req, res, rule, ctx, forward, key, null, 'MISS');
    }
    return fetchAndStore(req, res, rule, ctx, forward, key, null, 'MISS').then(() => {
      index.unlock(folder);
      release();
    });
  }

  async function purge(req, res, rule, ctx) {
    const client = req.svr.clientAddress ?? req.socket.remoteAddress;
    if (!purgers.has(client)) return ctx.sendError(req, res, 403);
    const removed = await store.purge(keyOf(req, rule, ctx));
    res.writeHead(removed ? 200 : 404, { 'content-type': 'text/plain' });
    return res.end(removed ? 'purged\n' : 'not in the cache\n');
  }

  return { handle, purge };
}

module.exports = { createResponseCache, MAX_UNCACHEABLE_KEYS };
