'use strict';
// The fast way to answer GET and HEAD for a regular file (issue 7): from memory, and compressed
// when the client accepts it. lib/static.js calls it once it has resolved and stat'ed the file:
//
//   const hot = createHotPath(config, { sendError, fileHeaders, isHiddenReal })
//   await hot.serve(req, res, real, rel, stats) -> true when it answered, false to let the static
//                                                  layer go on (Range requests, files too large to
//                                                  keep in memory and not compressed, a file that
//                                                  changed under us, an error to map to a status)
//
// Representations of a compressible file (text-like type, >= 512 bytes, not in dontCompress):
//   identity             ETag "<etag>"                      Vary: Accept-Encoding
//   br / gzip on the fly ETag "<etag>-br" / "<etag>-gzip"   compressed once and kept (bounded)
//   precompressed file   ETag "<etag>-<size>-<mtime>-br"    `<file>.br` / `<file>.gz` next to it,
//                                                           used only if at least as new as the file
// Range requests always get identity from the static layer (never a compressed 206) and conditional
// requests are evaluated against the ETag of the representation this request would get.
//
// Why synchronous: lib/static.js resolves a path with fs.realpathSync.native + fs.statSync, and the
// checks here use fs.lstatSync/fstatSync. On a local file system these are answered from the kernel's
// dentry and inode caches in about a microsecond each, while an fs.promises call costs a thread-pool
// round trip and its promise; profiled on a single-threaded worker serving a 1 KiB file, the async
// realpath+stat took 30% of the main thread and the sync ones 12% (6.9k -> 9.1k req/s). nginx makes
// the same blocking calls from its event loop. The cost: on a hung network file system the worker
// blocks; the other workers go on serving.

const { appendVary } = require('../../http/headers');
const fs = require('fs');
const path = require('path');
const stream = require('stream');
const { promisify } = require('util');
const { evaluatePreconditions } = require('./conditional');
const { FileCache, sameFile } = require('./file-cache');
const { createCompression } = require('./compression');

const openFile = promisify(fs.open);
const SIBLING_RECHECK_MS = 1000; // a missing .br/.gz is looked for again at most once a second
const DEFAULT_CACHE_BYTES = 32 * 1024 * 1024;
const DEFAULT_CACHE_FILE_SIZE = 1024 * 1024;

function addVary(res) {
  appendVary(res, 'Accept-Encoding');
}

// SVR_FILE_CACHE_SETTLE_MS: a test and diagnostics knob (see lib/file-cache.js), not a config key.
function settleMsFromEnv() {
  const value = Number(process.env.SVR_FILE_CACHE_SETTLE_MS);
  return process.env.SVR_FILE_CACHE_SETTLE_MS !== undefined && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function createHotPath(config, { sendError, fileHeaders, isHiddenReal }) {
  const compression = createCompression(config);
  const cache = new FileCache({
    maxBytes: config.fileCacheMaxBytes ?? DEFAULT_CACHE_BYTES,
    maxFileSize: config.fileCacheMaxFileSize ?? DEFAULT_CACHE_FILE_SIZE,
    settleMs: settleMsFromEnv(),
  });

  // What every response for this version of the file shares, computed once per version.
  function describe(e, rel) {
    if (e.describe !== undefined) return e.describe;
    const base = fileHeaders(e.real, e.stats); // Content-Type, Last-Modified, ETag, ... as the static layer sends them
    const urlPath = '/' + rel.split(path.sep).join('/');
    const compressible = compression !== null && compression.isCompressible(base['Content-Type'], urlPath, e.stats.size);
    const d = {
      base,
      compressible,
      etag: base.ETag || null,
      mtime: Math.floor(e.stats.mtimeMs / 1000),
      identity: { ...base, 'Content-Length': e.stats.size },
      notModified: notModifiedHeaders(base.ETag, base),
      siblings: {}, // coding -> { checkedAt } when none was found
    };
    e.describe = d;
    return d;
  }

  function notModifiedHeaders(etag, base) {
    const h = { 'Last-Modified': base['Last-Modified'] };
    if (etag) h.ETag = etag;
    return h;
  }

  // A representation other than identity: its validators and headers.
  function encodedRep(d, coding, etagTail, length) {
    const etag = d.etag ? `${d.etag.slice(0, -1)}-${etagTail}"` : null;
    const headers = { ...d.base, 'Content-Encoding': coding };
    delete headers['Accept-Ranges']; // ranges apply to identity only
    if (etag) headers.ETag = etag;
    if (length !== undefined) headers['Content-Length'] = length;
    return { etag, mtime: d.mtime, headers, notModified: notModifiedHeaders(etag, d.base), data: null };
  }

  // Preconditions, then 412 / 304 / HEAD. Returns true when answered.
  function answeredWithoutBody(req, res, rep) {
    const pre = evaluatePreconditions(req, rep);
    if (pre === 412) {
      sendError(req, res, 412);
      return true;
    }
    if (pre === 304) {
      res.writeHead(304, rep.notModified);
      res.end();
      return true;
    }
    if (req.method === 'HEAD') {
      res.writeHead(200, rep.headers);
      res.end();
      return true;
    }
    return false;
  }

  function serve(req, res, real, rel, stats) {
    if (stats.size > 0 && req.headers.range !== undefined) return false; // identity 206/416 by the static layer
    const e = cache.entry(real, stats);
    const d = describe(e, rel);
    let coding = null;
    if (d.compressible) {
      addVary(res);
      coding = compression.negotiate(req.headers['accept-encoding']);
    }
    if (coding !== null) {
      try {
        const done = sendEncoded(req, res, e, d, coding);
        return typeof done === 'boolean' ? done : done.catch((err) => failed(res, err));
      } catch (err) {
        return failed(res, err);
      }
    }
    if (!cache.fits(stats.size)) return false; // large and identity: streamed by the static layer
    return sendIdentity(req, res, e, d);
  }

  function failed(res, err) {
    if (!res.headersSent) return false; // the static layer opens the file itself and maps the error
    res.destroy(); // headers are out: all the client can learn is that the body is cut short
    return true;
  }

  function sendIdentity(req, res, e, d) {
    const rep = { etag: d.etag, mtime: d.mtime, headers: d.identity, notModified: d.notModified };
    if (answeredWithoutBody(req, res, rep)) return true;
    const kept = cache.kept(e);
    if (kept !== undefined) {
      res.writeHead(200, d.identity);
      res.end(kept);
      return true;
    }
    return cache.content(e).then((data) => {
      if (data === null) return false;
      res.writeHead(200, d.identity);
      res.end(data);
      return true;
    }, (err) => failed(res, err));
  }

  function sendEncoded(req, res, e, d, coding) {
    const sibling = findSibling(e, d, coding);
    if (sibling !== null) return sendSibling(req, res, e, d, coding, sibling);
    if (!cache.fits(e.stats.size)) {
      const rep = encodedRep(d, coding, coding);
      if (answeredWithoutBody(req, res, rep)) return true;
      return streamFile(req, res, e.real, e.stats, rep.headers, coding);
    }
    const kept = keptVariant(e, coding);
    if (kept !== undefined) return sendVariant(req, res, e, d, kept);
    return variant(e, d, coding).then((rep) => sendVariant(req, res, e, d, rep));
  }

  function sendVariant(req, res, e, d, rep) {
    if (rep === null) return false; // changed while read: the static layer streams identity
    if (rep.none) return sendIdentity(req, res, e, d); // compression would not make it smaller
    if (answeredWithoutBody(req, res, rep)) return true;
    res.writeHead(200, rep.headers);
    res.end(rep.data);
    return true;
  }

  // The compressed form of a file small enough to keep: computed once per content (a compressed
  // form remembers the Buffer it came from), shared by concurrent requests.
  function keptVariant(e, coding) {
    const content = cache.kept(e);
    if (content === undefined) return undefined;
    const kept = e.data.get(coding);
    return kept !== undefined && kept.value.source === content ? kept.value : undefined;
  }

  function variant(e, d, coding) {
    const pending = e.pending && e.pending[coding];
    if (pending) return pending;
    const work = cache.content(e).then(async (data) => {
      if (data === null) return null;
      const kept = e.data.get(coding);
      if (kept !== undefined && kept.value.source === data) return kept.value; // same bytes as last read
      const out = await compression.compress(data, coding);
      const rep = out.length < data.length ? encodedRep(d, coding, coding, out.length) : { none: true };
      if (!rep.none) rep.data = out;
      rep.source = data;
      cache.put(e, coding, rep, rep.none ? 0 : out.length);
      return rep;
    });
    if (!e.pending) e.pending = {};
    e.pending[coding] = work;
    const clear = () => { if (e.pending[coding] === work) e.pending[coding] = null; };
    work.then(clear, clear);
    return work;
  }

  // `<file>.br` / `<file>.gz`: a regular file (not a symlink), at least as new as the original.
  function findSibling(e, d, coding) {
    const miss = d.siblings[coding];
    const now = Date.now();
    if (miss !== undefined && now - miss.checkedAt < SIBLING_RECHECK_MS) return null;
    const file = e.real + compression.SIBLING_EXT[coding];
    let stats;
    try {
      stats = fs.lstatSync(file);
    } catch (err) {
      stats = null;
    }
    if (stats === null || !stats.isFile() || stats.mtimeMs < e.stats.mtimeMs || isHiddenReal(file)) {
      d.siblings[coding] = { checkedAt: now };
      return null;
    }
    d.siblings[coding] = undefined;
    return { file, stats };
  }

  async function sendSibling(req, res, e, d, coding, { file, stats }) {
    const tail = `${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}-${coding}`;
    const rep = encodedRep(d, coding, tail, stats.size);
    if (answeredWithoutBody(req, res, rep)) return true;
    if (cache.fits(stats.size)) {
      const data = await cache.siblingContent(e, `file-${coding}`, file, stats);
      if (data !== null) {
        res.writeHead(200, rep.headers);
        res.end(data);
        return true;
      }
    }
    return streamFile(req, res, file, stats, rep.headers, null);
  }

  // Streams a file that must still be `expected` when opened, compressed with `coding` (or as it is).
  async function streamFile(req, res, file, expected, headers, coding) {
    const fd = await openFile(file, 'r');
    let stats;
    try {
      stats = fs.fstatSync(fd);
    } catch (err) {
      fs.close(fd, () => {});
      throw err;
    }
    if (!sameFile(stats, expected)) {
      fs.close(fd, () => {});
      return false;
    }
    const transform = coding ? compression.createStream(coding, stats.size) : null;
    if (transform) {
      delete headers['Content-Length'];
      // No Content-Length for the access log to report: count what the compressor produced.
      req.svr.bodyBytes = 0;
      transform.on('data', (chunk) => { req.svr.bodyBytes += chunk.length; });
    }
    res.writeHead(200, headers);
    const source = fs.createReadStream(file, { fd, autoClose: true });
    const done = (err) => { if (err && !res.destroyed) res.destroy(); };
    if (transform) stream.pipeline(source, transform, res, done);
    else stream.pipeline(source, res, done);
    return true;
  }

  return { serve, cache, compression };
}

module.exports = { createHotPath, addVary };
