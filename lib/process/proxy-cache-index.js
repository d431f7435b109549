'use strict';
// The bound on the response cache's directory (lib/pipeline/cache/), kept in one place for
// the host: every worker reports each file it stores, and past proxyCache.maxBytes or maxEntries
// the files stored longest ago are removed. A removal (an eviction here, a PURGE in a worker) is
// passed on to every worker, which drops it from its memory; a PURGE is answered only once every
// worker has (or after FORGET_WAIT_MS). The directory is emptied when svr starts, so the
// index knows every file in it. Workers run user code that could send the primary anything: a
// file outside the directory is ignored, and only files reported as stored are ever removed.
//
//   createCacheIndex(config, log, { forgetEverywhere }) -> null (no rule caches) |
//     { stored(file, bytes), removed(folder), status() -> { entries, bytes, stored } }
//     forgetEverywhere(path) -> Promise: tell every worker to drop `path` from memory
//   ipcCacheIndex({ ask, send }) -> the workers' side: { stored(file, bytes), removed(folder) -> Promise,
//                      onForget(callback(path)), forgetMessage(message), lock(folder) ->
//                      Promise<'granted' | 'released'>, unlock(folder) }
//     lock: one upstream request for concurrent misses of a URL over the workers (nginx's
//     proxy_cache_lock): the first worker to ask is 'granted' and fetches; the others' answer
//     comes when it unlocks (or after LOCK_MS, or when it dies), as 'released'.
//   inProcessCacheIndex(config, log) -> the same for --single-threaded
//   primaryCacheIndex(config, log, workers) -> the index plus the answers to the workers'
//                      messages and questions about it (messages.js: cache-*)

const fs = require('node:fs');
const path = require('node:path');
const { proxyCacheDirectory } = require('../product');

// A `proxy` or `fastcgi` rule with `"cache": true` (the pipeline asks the same of its config).
function cachesAnything(config) {
  const caches = (rules) => Array.isArray(rules) && rules.some((rule) => rule.cache);
  return caches(config.proxy) || caches(config.fastcgi);
}

const FORGET_WAIT_MS = 1000;
const LOCK_MS = 5000; // as nginx's proxy_cache_lock_timeout
const MAX_LOCKS = 10000;

function createCacheIndex(config, log, { forgetEverywhere = () => Promise.resolve() } = {}) {
  if (!cachesAnything(config)) return null;
  const { maxBytes, maxEntries } = config.proxyCache;
  const directory = proxyCacheDirectory(config);
  fs.rmSync(directory, { recursive: true, force: true });
  fs.mkdirSync(directory, { recursive: true, mode: 0o700 });
  const files = new Map(); // file -> bytes, stored longest ago first
  let bytes = 0;
  let storedTotal = 0; // files stored since the start

  const inside = (file) => typeof file === 'string' && path.resolve(file) === file && file.startsWith(directory + path.sep);
  const drop = (file) => {
    bytes -= files.get(file);
    files.delete(file);
  };

  return {
    stored(file, size) {
      if (!inside(file) || !Number.isInteger(size) || size < 0) return;
      if (files.has(file)) drop(file);
      storedTotal++;
      files.set(file, size);
      bytes += size;
      while ((bytes > maxBytes || files.size > maxEntries) && files.size > 0) {
        const oldest = files.keys().next().value;
        drop(oldest);
        forgetEverywhere(oldest);
        fs.rm(oldest, { force: true }, (error) => { if (error) log.warn(`proxy cache: cannot remove ${oldest}: ${error.message}`); });
      }
    },
    removed(folder) {
      if (!inside(folder)) return Promise.resolve();
      for (const file of [...files.keys()]) if (file.startsWith(folder + path.sep)) drop(file);
      return forgetEverywhere(folder);
    },
    status: () => ({ entries: files.size, bytes, stored: storedTotal }),
  };
}

// A worker's side. ask, send: the worker's (messages.js). The dispatcher hands 'cache-forget'
// to forgetMessage().
function ipcCacheIndex({ ask, send }) {
  let forget = () => {};
  return {
    stored: (file, bytes) => send({ type: 'cache-stored', file, bytes }),
    removed: (folder) => ask('cache-purged', folder, { timeoutMs: 2 * FORGET_WAIT_MS }).catch(() => false),
    onForget: (callback) => { forget = callback; },
    forgetMessage(message) {
      if (typeof message.path === 'string') forget(message.path);
      send({ type: 'cache-forgotten', id: message.id });
    },
    lock: (folder) => ask('cache-lock', folder, { timeoutMs: LOCK_MS + 1000 }).catch(() => 'released'),
    unlock: (folder) => send({ type: 'cache-unlock', folder }),
  };
}

// --single-threaded: the index in this process, and its only worker's memory.
function inProcessCacheIndex(config, log) {
  let forget = () => {};
  const index = createCacheIndex(config, log, { forgetEverywhere: (target) => { forget(target); return Promise.resolve(); } });
  // One worker: its own requests wait for each other (cache/index.js), so every lock is granted.
  return index && { ...index, onForget: (callback) => { forget = callback; }, lock: async () => 'granted', unlock() {} };
}

// The primary's side: the index, the locks, and the messages and questions about them. A purge
// is answered once every worker has answered its 'cache-forget' (or after FORGET_WAIT_MS).
//   primaryCacheIndex(config, log, workers) -> null | { ...index, lock(worker, folder) -> Promise,
//     unlock(worker, folder), purged(folder) -> Promise<true>, forgotten(worker, id), workerGone(worker) }
function primaryCacheIndex(config, log, workers) {
  const pending = new Map(); // forget id -> { left: Set(worker), done }
  let nextId = 1;
  const forgetEverywhere = (target) => new Promise((resolve) => {
    const id = nextId++;
    const left = new Set([...workers()].filter((worker) => worker.isConnected()));
    const done = () => { clearTimeout(timer); pending.delete(id); resolve(); };
    const timer = setTimeout(done, FORGET_WAIT_MS);
    pending.set(id, { left, done });
    for (const worker of left) worker.send({ type: 'cache-forget', id, path: target });
    if (left.size === 0) done();
  });
  const index = createCacheIndex(config, log, { forgetEverywhere });
  if (index === null) return null;
  const locks = new Map(); // folder -> { holder, waiters: [resolve], timer }
  const release = (folder) => {
    const lock = locks.get(folder);
    if (!lock) return;
    locks.delete(folder);
    clearTimeout(lock.timer);
    for (const resolve of lock.waiters) resolve('released');
  };
  return {
    ...index,
    lock(worker, folder) {
      if (typeof folder !== 'string') throw new Error('expected a folder');
      const lock = locks.get(folder);
      if (lock) return new Promise((resolve) => lock.waiters.push(resolve));
      if (locks.size >= MAX_LOCKS) return 'granted'; // never a table without bound
      locks.set(folder, { holder: worker, waiters: [], timer: setTimeout(() => release(folder), LOCK_MS) });
      return 'granted';
    },
    unlock(worker, folder) {
      if (locks.get(folder)?.holder === worker) release(folder);
    },
    purged: (folder) => index.removed(folder).then(() => true),
    forgotten(worker, id) {
      const entry = pending.get(id);
      if (!entry) return;
      entry.left.delete(worker);
      if (entry.left.size === 0) entry.done();
    },
    workerGone(worker) {
      for (const [folder, lock] of [...locks]) if (lock.holder === worker) release(folder);
      for (const [id] of [...pending]) this.forgotten(worker, id);
    },
  };
}

module.exports = { createCacheIndex, primaryCacheIndex, ipcCacheIndex, inProcessCacheIndex, cachesAnything, LOCK_MS };
