'use strict';
// The bound on the proxy cache's directory (lib/pipeline/proxy/cache/), kept in one place for
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
//   ipcCacheIndex() -> the workers' side: { stored(file, bytes), removed(folder) -> Promise,
//                      onForget(callback(path)), lock(folder) -> Promise<'granted' | 'released'>,
//                      unlock(folder) }
//     lock: one upstream request for concurrent misses of a URL over the workers (nginx's
//     proxy_cache_lock): the first worker to ask is 'granted' and fetches; the others' answer
//     comes when it unlocks (or after LOCK_MS, or when it dies), as 'released'.
//   inProcessCacheIndex(config, log) -> the same for --single-threaded
//   primaryCacheIndex(config, log, workers) -> the index plus answer(worker, message) for the
//                      messages 'cache-stored', 'cache-removed', 'cache-forgotten', 'cache-lock',
//                      'cache-unlock', and workerGone(worker)

const fs = require('node:fs');
const path = require('node:path');
const { proxyCacheDirectory } = require('../product');

function cachesAnything(config) {
  return config.proxy.some((rule) => rule.cache);
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

function ipcCacheIndex() {
  const send = (message) => { if (process.connected) process.send(message); };
  const waiting = new Map(); // id -> resolve, for removals and locks
  let nextId = 1;
  let forget = () => {};
  const ask = (message, fallback, timeoutMs) => new Promise((resolve) => {
    if (!process.connected) return resolve(fallback);
    const id = nextId++;
    const timer = setTimeout(() => { waiting.delete(id); resolve(fallback); }, timeoutMs);
    waiting.set(id, (answer) => { clearTimeout(timer); resolve(answer); });
    return send({ ...message, id });
  });
  process.on('message', (message) => {
    if (!message) return;
    if (message.type === 'cache-forget' && typeof message.path === 'string') {
      forget(message.path);
      if (message.id !== undefined) send({ type: 'cache-forgotten', id: message.id });
    } else if ((message.type === 'cache-removed-everywhere' || message.type === 'cache-lock-answer') && waiting.has(message.id)) {
      waiting.get(message.id)(message.lock);
      waiting.delete(message.id);
    }
  });
  return {
    stored: (file, bytes) => send({ type: 'cache-stored', file, bytes }),
    removed: (folder) => ask({ type: 'cache-removed', folder }, undefined, 2 * FORGET_WAIT_MS),
    onForget: (callback) => { forget = callback; },
    lock: (folder) => ask({ type: 'cache-lock', folder }, 'released', LOCK_MS + 1000),
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

// The primary's side. A removal waits for every worker's 'cache-forgotten' before it answers.
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
  const locks = new Map(); // folder -> { holder, waiters: [[worker, id]], timer }
  const answerLock = (worker, id, lock) => { if (worker.isConnected()) worker.send({ type: 'cache-lock-answer', id, lock }); };
  const release = (folder) => {
    const lock = locks.get(folder);
    if (!lock) return;
    locks.delete(folder);
    clearTimeout(lock.timer);
    for (const [worker, id] of lock.waiters) answerLock(worker, id, 'released');
  };
  return {
    ...index,
    workerGone(worker) {
      for (const [folder, lock] of [...locks]) {
        if (lock.holder === worker) release(folder);
        else lock.waiters = lock.waiters.filter(([waiter]) => waiter !== worker);
      }
    },
    answer(worker, message) {
      if (message.type === 'cache-lock' && typeof message.folder === 'string') {
        const lock = locks.get(message.folder);
        if (lock) return void lock.waiters.push([worker, message.id]);
        if (locks.size >= MAX_LOCKS) return answerLock(worker, message.id, 'granted'); // never a queue without bound
        locks.set(message.folder, { holder: worker, waiters: [], timer: setTimeout(() => release(message.folder), LOCK_MS) });
        return answerLock(worker, message.id, 'granted');
      }
      if (message.type === 'cache-unlock') {
        if (locks.get(message.folder)?.holder === worker) release(message.folder);
        return undefined;
      }
      if (message.type === 'cache-stored') index.stored(message.file, message.bytes);
      else if (message.type === 'cache-removed') {
        index.removed(message.folder).then(() => { if (worker.isConnected()) worker.send({ type: 'cache-removed-everywhere', id: message.id }); });
      } else if (message.type === 'cache-forgotten' && pending.has(message.id)) {
        const entry = pending.get(message.id);
        entry.left.delete(worker);
        if (entry.left.size === 0) entry.done();
      }
    },
  };
}

module.exports = { createCacheIndex, primaryCacheIndex, ipcCacheIndex, inProcessCacheIndex, cachesAnything };
