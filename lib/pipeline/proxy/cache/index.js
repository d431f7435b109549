'use strict';
// The reverse proxy's response cache, for rules with `"cache": true` (docs/limits-and-caching.md).
//
//   createProxyCache(site, { index }) -> null (no rule caches) | { handle(req, res, rule, ctx, forward), purge(req, res, rule) }
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
// Concurrent misses of one key make one upstream request for the host: in a worker the first one
// asks the primary for the key's lock (index.lock) and the others wait for it; a worker whose
// lock comes back 'released' (another worker fetched) reads what that one stored, and forwards
// only when nothing could be stored.
// PURGE of a URL, from an address in proxyCache.purgeFrom, removes its entries (every variant).

const { PassThrough } = require('node:stream');
const { bypassReason, storable, ageOf } = require('./policy');
const { createDiskStore } = require('./disk-store');
const { compileAddressList } = require('../../../http/address-list');
const { proxyCacheDirectory } = require('../../../product');
const { plainAddress } = require('../../../http/trusted-proxies');

// Bodies of responses being stored are held in memory until they end: at most this many times
// maxEntryBytes in a worker (64 MiB by default; beyond, a response streams through unstored), so
// many large misses at once cannot fill its memory.
const BUFFERED_ENTRIES = 8;
// Headers of a stored response that belong to that one exchange, not to the cached entry.
const NOT_STORED = new Set(['set-cookie', 'age', 'x-cache', 'date', 'connection', 'keep-alive', 'transfer-encoding']);

function createProxyCache(site, { index }) {
  const { config } = site;
  if (!config.proxy.some((rule) => rule.cache)) return null;
  const settings = config.proxyCache;
  const store = createDiskStore({ directory: proxyCacheDirectory(config), memoryBytes: settings.memoryBytes, index });
  index.onForget(store.forget); // purges and evictions anywhere in the host
  const purgers = compileAddressList(settings.purgeFrom, 'proxyCache.purgeFrom');
  const inflight = new Map(); // key -> Promise settled when that fetch is stored or not
  const bufferBudget = BUFFERED_ENTRIES * settings.maxEntryBytes;
  let buffered = 0; // bytes of bodies held for storing, in this worker

  function keyOf(req, rule, ctx) {
    const host = String(req.headers.host || req.headers[':authority'] || '').toLowerCase();
    const scheme = req.socket && req.socket.encrypted ? 'https' : 'http';
    let key = `${rule.prefix}\n${scheme}://${host}${req.url}`;
    if (ctx.isTrusted(plainAddress(req.socket.remoteAddress))) {
      key += `\n${req.headers['x-forwarded-host'] || ''}\n${req.headers['x-forwarded-proto'] || ''}`;
    }
    return key;
  }

  function mark(req, res, status) {
    req.svr.cache = status;
    if (!res.headersSent) res.setHeader('X-Cache', status);
  }

  function isFresh(entry, now) {
    return !entry.meta.revalidateAlways && now < entry.meta.storedAt + entry.meta.lifetimeMs;
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
      res.writeHead(304, [...storedHeaders(entry), 'age', age, 'x-cache', status]);
      return res.end();
    }
    req.svr.bodyBytes = entry.body.length;
    const length = entry.meta.status === 204 ? [] : ['content-length', String(entry.body.length)];
    res.writeHead(entry.meta.status, [...storedHeaders(entry), 'age', age, 'x-cache', status, ...length]);
    return res.end(req.method === 'HEAD' ? undefined : entry.body);
  }

  // The response of a GET as it streams to the client, kept (up to maxEntryBytes) and stored.
  function storingTap(req, key, upRes, headers, settle) {
    const policy = req.method === 'GET' ? storable(upRes.statusCode, headers, settings) : { reason: 'HEAD' };
    if (policy.reason) { settle(); return null; }
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
        store.save(key, req, meta, Buffer.concat(chunks)).catch((error) => site.log.warn(`proxy cache: cannot store ${req.url}: ${error.message}`)).finally(settle);
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
    const requestHeaders = {};
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
          answerFromEntry(req, res, { meta, body: stale.body }, 'REVALIDATED');
          return 'handled';
        }
        mark(req, res, status);
        return storingTap(req, key, upRes, headers, settle);
      },
      onFailure() {
        settle();
        if (res.background) return true; // a refresh behind a STALE answer: nobody to answer
        if (!stale) return false;
        const age = Date.now() - stale.meta.storedAt - stale.meta.lifetimeMs;
        if (age > (stale.meta.staleIfErrorMs || 0)) return false;
        answerFromEntry(req, res, stale, 'STALE');
        return true;
      },
    });
    return done;
  }

  // A fresh entry in this worker's memory is answered at once, without a promise; the rest
  // (the disk, the upstream) in lookUp().
  function handle(req, res, rule, ctx, forward) {
    const reason = bypassReason(req);
    if (reason !== null) {
      mark(req, res, 'BYPASS');
      return forward(req, res, rule, ctx);
    }
    const key = keyOf(req, rule, ctx);
    const held = store.lookupMemory(key, req);
    if (held !== null && isFresh(held, Date.now())) return answerFromEntry(req, res, held, 'HIT');
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
    if (isFresh(entry, now)) return answerFromEntry(req, res, entry, 'HIT');
    const staleFor = now - entry.meta.storedAt - entry.meta.lifetimeMs;
    if (!entry.meta.revalidateAlways && staleFor <= (entry.meta.staleWhileRevalidateMs || 0)) {
      answerFromEntry(req, res, entry, 'STALE');
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
      if (entry !== null && isFresh(entry, Date.now())) return answerFromEntry(req, res, entry, 'HIT');
      return fetchAndStore(req, res, rule, ctx, forward, key, null, 'MISS');
    }
    return fetchAndStore(req, res, rule, ctx, forward, key, null, 'MISS').then(() => {
      index.unlock(folder);
      release();
    });
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
    const background = { method: 'GET', url: req.url, headers: { ...req.headers }, httpVersionMajor: 1, httpVersion: '1.1', socket: req.socket, svr: { cache: 'STALE' } };
    fetchAndStore(background, fake, rule, ctx, forward, key, entry, 'STALE');
  }

  async function purge(req, res, rule, ctx) {
    const client = req.svr.clientAddress ?? req.socket.remoteAddress;
    if (!purgers.has(client)) return site.sendError(req, res, 403);
    const removed = await store.purge(keyOf(req, rule, ctx));
    res.writeHead(removed ? 200 : 404, { 'content-type': 'text/plain' });
    return res.end(removed ? 'purged\n' : 'not in the cache\n');
  }

  return { handle, purge };
}

module.exports = { createProxyCache };
