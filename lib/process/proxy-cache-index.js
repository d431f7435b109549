'use strict';
// The bound on the proxy cache's directory (lib/pipeline/proxy/cache/), kept in one place for
// the host: every worker reports each file it stores, and past proxyCache.maxBytes or maxEntries
// the files stored longest ago are removed. The directory is emptied when svr starts, so the
// index knows every file in it. Workers run user code that could send the primary anything: a
// file outside the directory is ignored, and only files reported as stored are ever removed.
//
//   createCacheIndex(config, log) -> null (no rule caches) | { stored(file, bytes), removed(folder),
//                                    status() -> { entries, bytes } }
//   ipcCacheIndex() -> the workers' side: the same two calls as messages to the primary
//   answerCacheIndex(message, index)   for messages of type 'cache-stored' / 'cache-removed'

const fs = require('node:fs');
const path = require('node:path');
const { proxyCacheDirectory } = require('../product');

function cachesAnything(config) {
  return config.proxy.some((rule) => rule.cache);
}

function createCacheIndex(config, log) {
  if (!cachesAnything(config)) return null;
  const { maxBytes, maxEntries } = config.proxyCache;
  const directory = proxyCacheDirectory(config);
  fs.rmSync(directory, { recursive: true, force: true });
  fs.mkdirSync(directory, { recursive: true, mode: 0o700 });
  const files = new Map(); // file -> bytes, stored longest ago first
  let bytes = 0;

  const inside = (file) => typeof file === 'string' && path.resolve(file) === file && file.startsWith(directory + path.sep);
  const drop = (file) => {
    bytes -= files.get(file);
    files.delete(file);
  };

  return {
    stored(file, size) {
      if (!inside(file) || !Number.isInteger(size) || size < 0) return;
      if (files.has(file)) drop(file);
      files.set(file, size);
      bytes += size;
      while ((bytes > maxBytes || files.size > maxEntries) && files.size > 0) {
        const oldest = files.keys().next().value;
        drop(oldest);
        fs.rm(oldest, { force: true }, (error) => { if (error) log.warn(`proxy cache: cannot remove ${oldest}: ${error.message}`); });
      }
    },
    removed(folder) {
      if (!inside(folder)) return;
      for (const file of [...files.keys()]) if (file.startsWith(folder + path.sep)) drop(file);
    },
    status: () => ({ entries: files.size, bytes }),
  };
}

function ipcCacheIndex() {
  const send = (message) => { if (process.connected) process.send(message); };
  return {
    stored: (file, bytes) => send({ type: 'cache-stored', file, bytes }),
    removed: (folder) => send({ type: 'cache-removed', folder }),
  };
}

function answerCacheIndex(message, index) {
  if (index === null) return;
  if (message.type === 'cache-stored') index.stored(message.file, message.bytes);
  else if (message.type === 'cache-removed') index.removed(message.folder);
}

module.exports = { createCacheIndex, ipcCacheIndex, answerCacheIndex, cachesAnything };
