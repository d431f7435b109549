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
//                      onForget(callback(path)) }
//   inProcessCacheIndex(config, log) -> the same for --single-threaded
//   answerCacheIndex(worker, message, index, workers)   for messages 'cache-stored', 'cache-removed',
//                      'cache-forgotten' (workers: those to tell)

const fs = require('node:fs');
const path = require('node:path');
const { proxyCacheDirectory } = require('../product');

function cachesAnything(config) {
  return config.proxy.some((rule) => rule.cache);
}

const FORGET_WAIT_MS = 1000;

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
  const waiting = new Map(); // id -> resolve, for removals
  let nextId = 1;
  let forget = () => {};
  process.on('message', (message) => {
    if (!message) return;
    if (message.type === 'cache-forget' && typeof message.path === 'string') {
      forget(message.path);
      if (message.id !== undefined) send({ type: 'cache-forgotten', id: message.id });
    } else if (message.type === 'cache-removed-everywhere' && waiting.has(message.id)) {
      waiting.get(message.id)();
      waiting.delete(message.id);
    }
  });
  return {
    stored: (file, bytes) => send({ type: 'cache-stored', file, bytes }),
    removed: (folder) => new Promise((resolve) => {
      if (!process.connected) return resolve();
      const id = nextId++;
      const timer = setTimeout(() => { waiting.delete(id); resolve(); }, 2 * FORGET_WAIT_MS);
      waiting.set(id, () => { clearTimeout(timer); resolve(); });
      return send({ type: 'cache-removed', id, folder });
    }),
    onForget: (callback) => { forget = callback; },
  };
}

// --single-threaded: the index in this process, and its only worker's memory.
function inProcessCacheIndex(config, log) {
  let forget = () => {};
  const index = createCacheIndex(config, log, { forgetEverywhere: (target) => { forget(target); return Promise.resolve(); } });
  return index && { ...index, onForget: (callback) => { forget = callback; } };
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
  return {
    ...index,
    answer(worker, message) {
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
