'use strict';
// One path for every file response, in nginx's order:
//   1. choose the representation: identity, a precompressed sibling (`x.br`, `x.gz`), the
//      compressed form (kept in memory when the file is small enough, streamed otherwise), or the
//      page wrapped in the web root's head and foot; `Vary: Accept-Encoding` for every
//      compressible file;
//   2. evaluate the preconditions once, against that representation (412 / 304);
//   3. HEAD, then Range (identity only: 206 / 416);
//   4. the body, from memory or from one file descriptor stream, never past the announced length.
//
//   const { respond } = createResponder(site, { isHidden })
//   respond(req, res, { real, rel, stats })   (stats: what the static stage saw; may return a promise)
//
// The functions below take the responder's state `r` (createResponder): the site's sendError and
// webRoot, the worker's file cache and chunk budget, the compression settings, and the wrapping.
//
// Representations of a compressible file (text-like type, >= 512 bytes, not in dontCompress):
//   identity             ETag "<etag>"
//   br / gzip            ETag "<etag>-br" / "<etag>-gzip"   compressed once and kept (bounded), or
//                                                           streamed for files too large to keep
//   precompressed file   ETag "<etag>-<size>-<mtime>-br"    used only if at least as new as the file
// With enableIncludingHeadAndFootInHTML and a .head or .foot in the root (site.headFoot), an .html
// page (not head.html or foot.html themselves) has one representation instead: head, file, foot,
// ETag "<etag>-hf<hash of head and foot>", never compressed and never in ranges, since its bytes
// are not the file's.
// A file that changes between the static stage's stat and the open is answered as what was opened,
// once the descriptor is shown to be at the checked path (site.webRoot.isAt): the static stage's
// lstat/realpath can be fooled by a directory swapped for a link mid-walk, the descriptor cannot.
// No answer (not even HEAD or 304) is made for a version of a file that no descriptor has
// confirmed: an entry of the file cache is `verified` once a descriptor opened at its path had its
// stats; a request whose stat matches a verified entry is answered without opening anything.

const fs = require('node:fs');
const path = require('node:path');
const stream = require('node:stream');
const mime = require('mime-types');
const { appendVary, varyWith } = require('../../http/headers');
const { takeDeferred } = require('../../http/response');
const { makeETag, evaluatePreconditions, ifRangeMatches, parseRange } = require('../../http/conditional');
const { FileCache, sameFile, readWhole } = require('./file-cache');
const { createCompression } = require('./compression');
const { errorStatus } = require('../path-policy');
const { isHttp2, answerHttp2, SLICE_BYTES } = require('./http2-body');

const SIBLING_RECHECK_MS = 1000; // a missing .br/.gz is looked for again at most once a second
// Bytes read from a file per chunk of a streamed body. Node's default, 64 KiB, cost a
// single-threaded worker 3.2-3.9 ms of CPU per 4 MiB response; 256 KiB 2.3-2.6 ms (1 MiB: 2.0-2.1 ms).
// Each stream holds about two chunks, and a client that reads nothing keeps them: so only the
// first LARGE_CHUNK_STREAMS bodies streaming at once in a worker read large chunks (+6 MiB at
// most), the others Node's default (128 stalled HTTP/2 streams on one connection: +68 MiB with
// large chunks for all, against the 64 MiB bound test/net/limits-http2.test.js holds).
const LARGE_CHUNK_BYTES = 256 * 1024;
const SMALL_CHUNK_BYTES = 64 * 1024;
const LARGE_CHUNK_STREAMS = 16;
const WRAPPED_TYPE = 'text/html; charset=utf-8';

function createResponder(site, { isHidden }) {
  const { config } = site;
  const compression = createCompression(config);
  const r = {
    sendError: site.sendError,
    webRoot: site.webRoot,
    enableETag: config.enableETag,
    compression,
    cache: sharedFileCache(site),
    chunks: sharedChunkBudget(site),
    isHidden,
    wrapping: htmlWrapping(site),
    fixed: site.headers.fixed, // what the first stage leaves waiting on svr's HTTP/1 responses
  };
  return { respond: (req, res, found) => respond(r, req, res, found), cache: r.cache, compression };
}

// One cache per worker, shared by every virtual host's web root (site.shared), so that
// fileCacheMaxBytes bounds the worker, not each root.
function sharedFileCache(site) {
  const shared = site.shared || {};
  const { config, webRoot } = site;
  if (!shared.fileCache) {
    shared.fileCache = new FileCache({
      maxBytes: config.fileCacheMaxBytes,
      maxFileSize: config.fileCacheMaxFileSize,
      settleMs: settleMsFromEnv(),
      // Checks each descriptor against the path it was opened at: the same for every root.
      readFile: (file) => readWhole(file, webRoot),
    });
  }
  return shared.fileCache;
}

// Streamed bodies reading large chunks now (LARGE_CHUNK_STREAMS), shared by the worker's roots.
function sharedChunkBudget(site) {
  const shared = site.shared || {};
  if (!shared.chunks) shared.chunks = { large: 0 };
  return shared.chunks;
}

// The head and foot .html pages are wrapped in, or null when that is off or both are empty.
function htmlWrapping(site) {
  const { headFoot } = site;
  if (!site.config.enableIncludingHeadAndFootInHTML || !headFoot) return null;
  const { head, foot } = headFoot;
  if (head.length === 0 && foot.length === 0) return null;
  return {
    head,
    foot,
    tag: require('node:crypto').createHash('sha256') // here only: a site without head/foot needs no node:crypto
      .update(head).update('\0').update(foot).digest('hex').slice(0, 12),
    own: new Set(['head.html', 'foot.html'].map((name) => path.join(site.root, name))), // served as they are
  };
}

function wraps(r, real) {
  return r.wrapping !== null && /\.html?$/i.test(real) && !r.wrapping.own.has(real);
}

function contentType(file) {
  return mime.contentType(path.basename(file)) || 'application/octet-stream';
}

// A pipelined response waits in Node's queue with res.socket === null until the ones before it
// are sent: that is not a client that went away, so look at the connection the request came on.
function gone(req, res) {
  return res.destroyed || !req.socket || req.socket.destroyed;
}

// A queued response is never destroyed by Node when its connection closes: do it, so its
// stream releases its descriptor.
function destroyWithConnection(req, res) {
  if (res.socket || !req.socket) return;
  const onClose = () => { if (!res.writableFinished) res.destroy(); };
  req.socket.once('close', onClose);
  res.once('finish', () => req.socket.off('close', onClose));
}

function openFile(file, flags) {
  return new Promise((resolve, reject) => fs.open(file, flags, (err, fd) => (err ? reject(err) : resolve(fd))));
}

function notHere() {
  return Object.assign(new Error('the file is no longer at the checked path'), { code: 'ENOENT' });
}

// SVR_FILE_CACHE_SETTLE_MS: a test and diagnostics knob (see file-cache.js), not a config key.
function settleMsFromEnv() {
  const value = Number(process.env.SVR_FILE_CACHE_SETTLE_MS);
  return process.env.SVR_FILE_CACHE_SETTLE_MS !== undefined && Number.isFinite(value) && value >= 0 ? value : undefined;
}

// A precompressed sibling's ETag tail: its own size and mtime, so a new sibling gets a new tag.
function siblingTail(stats, coding) {
  return `${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}-${coding}`;
}

function notModifiedHeaders(etag, lastModified) {
  return etag ? { 'Last-Modified': lastModified, ETag: etag } : { 'Last-Modified': lastModified };
}

// What every response for one version of a file shares, computed once per version.
function fileFacts(r, entry, rel) {
  if (entry.facts !== undefined) return entry.facts;
  const { stats } = entry;
  const base = {
    'Content-Type': contentType(entry.real),
    'Last-Modified': stats.mtime.toUTCString(),
    'Accept-Ranges': 'bytes',
    'X-Content-Type-Options': 'nosniff',
  };
  const etag = r.enableETag ? makeETag(stats) : null;
  if (etag) base.ETag = etag;
  const urlPath = '/' + rel.split(path.sep).join('/');
  const facts = {
    base,
    etag,
    mtime: Math.floor(stats.mtimeMs / 1000),
    compressible: r.compression !== null && r.compression.isCompressible(base['Content-Type'], urlPath, stats.size),
    siblings: {}, // coding -> { checkedAt } when none was found
  };
  facts.identity = {
    coding: null, etag, mtime: facts.mtime, vary: facts.compressible,
    headers: { ...base, 'Content-Length': stats.size },
    notModified: notModifiedHeaders(etag, base['Last-Modified']),
    file: entry.real, stats, inMemory: r.cache.fits(stats.size),
  };
  entry.facts = facts;
  return facts;
}

// A representation other than identity: its validators and headers.
function encodedRep(facts, coding, etagTail, length) {
  const etag = facts.etag ? `${facts.etag.slice(0, -1)}-${etagTail}"` : null;
  const headers = { ...facts.base, 'Content-Encoding': coding };
  delete headers['Accept-Ranges']; // ranges apply to identity only
  if (etag) headers.ETag = etag;
  if (length !== undefined) headers['Content-Length'] = length;
  return { coding, etag, mtime: facts.mtime, vary: true, headers, notModified: notModifiedHeaders(etag, facts.base['Last-Modified']) };
}

// The page between the web root's head and foot, for the version of the file in `stats`.
function wrappedRep(r, file, stats) {
  const { head, foot, tag } = r.wrapping;
  const etag = r.enableETag ? `${makeETag(stats).slice(0, -1)}-hf${tag}"` : null;
  const lastModified = stats.mtime.toUTCString();
  const headers = { 'Content-Type': WRAPPED_TYPE, 'Last-Modified': lastModified, 'X-Content-Type-Options': 'nosniff' };
  if (etag) headers.ETag = etag;
  headers['Content-Length'] = head.length + stats.size + foot.length;
  return {
    coding: null, etag, mtime: Math.floor(stats.mtimeMs / 1000), vary: false, headers,
    notModified: notModifiedHeaders(etag, lastModified),
    file, stats, inMemory: false, wrapped: r.wrapping,
  };
}

// 1. The representation this request gets; a promise while a compressed form is being made.
function chooseRepresentation(r, req, res, entry, facts) {
  if (wraps(r, entry.real)) return wrappedRep(r, entry.real, entry.stats);
  if (!facts.compressible) return facts.identity; // its vary is false: no Vary: Accept-Encoding
  if (req.headers.range !== undefined && entry.stats.size > 0) return facts.identity;
  const coding = r.compression.negotiate(req.headers['accept-encoding']);
  if (coding === null) return facts.identity;
  const sibling = findSibling(r, entry, facts, coding);
  if (sibling !== null) {
    const tail = siblingTail(sibling.stats, coding);
    return { ...encodedRep(facts, coding, tail, sibling.stats.size), file: sibling.file, stats: sibling.stats, inMemory: r.cache.fits(sibling.stats.size), sibling: true };
  }
  if (!r.cache.fits(entry.stats.size)) {
    if (!r.compression.reserveStream(entry.stats.size)) return facts.identity;
    return { ...encodedRep(facts, coding, coding), file: entry.real, stats: entry.stats, inMemory: false, compressStream: true, slot: true };
  }
  const kept = keptVariant(r, entry, coding);
  if (kept !== undefined) return kept.none ? facts.identity : kept;
  return compressedVariant(r, entry, facts, coding).then((rep) => (rep === null || rep.none ? facts.identity : rep));
}

// The compressed form of a file small enough to keep: computed once per content (a compressed
// form remembers the Buffer it came from), shared by concurrent requests.
function keptVariant(r, entry, coding) {
  const content = r.cache.kept(entry);
  if (content === undefined) return undefined;
  const kept = entry.data.get(coding);
  return kept !== undefined && kept.value.source === content ? kept.value : undefined;
}

function compressedVariant(r, entry, facts, coding) {
  const pending = entry.pending && entry.pending[coding];
  if (pending) return pending;
  const work = r.cache.content(entry).then(async (data) => {
    if (data === null) return null; // changed while read: identity, streamed from what is opened
    const kept = entry.data.get(coding);
    if (kept !== undefined && kept.value.source === data) return kept.value; // same bytes as last read
    const out = await r.compression.compress(data, coding);
    const rep = out.length < data.length
      ? { ...encodedRep(facts, coding, coding, out.length), data: out, stats: entry.stats }
      : { none: true };
    rep.source = data;
    r.cache.put(entry, coding, rep, rep.none ? 0 : out.length);
    return rep;
  });
  if (!entry.pending) entry.pending = {};
  entry.pending[coding] = work;
  const clear = () => { if (entry.pending[coding] === work) entry.pending[coding] = null; };
  work.then(clear, clear);
  return work;
}

// `<file>.br` / `<file>.gz`: a regular file (not a symlink), at least as new as the original.
function findSibling(r, entry, facts, coding) {
  const miss = facts.siblings[coding];
  const now = Date.now();
  if (miss !== undefined && now - miss.checkedAt < SIBLING_RECHECK_MS) return null;
  const file = entry.real + r.compression.SIBLING_EXT[coding];
  let stats = null;
  try {
    stats = fs.lstatSync(file);
  } catch { /* none */ }
  if (stats === null || !stats.isFile() || stats.mtimeMs < entry.stats.mtimeMs || r.isHidden(file) ||
      !siblingConfirmed(r, facts, coding, file, stats)) {
    facts.siblings[coding] = { checkedAt: now };
    return null;
  }
  facts.siblings[coding] = undefined;
  return { file, stats };
}

// A sibling's lstat is trusted once a descriptor opened at its path showed the same file.
function siblingConfirmed(r, facts, coding, file, stats) {
  if (!facts.confirmed) facts.confirmed = {};
  const seen = facts.confirmed[coding];
  if (seen !== undefined && sameFile(seen, stats)) return true;
  const opened = openChecked(r, file);
  if (opened === null) return false;
  fs.closeSync(opened.fd);
  if (!sameFile(opened.stats, stats)) return false;
  facts.confirmed[coding] = stats;
  return true;
}

// webRoot.openSync, with any failure to open read as "not here".
function openChecked(r, file) {
  try {
    return r.webRoot.openSync(file);
  } catch {
    return null;
  }
}

// 2 and 3: preconditions, HEAD and Range, in that order; then the body. An answer without a body
// gives back the compression slot its representation reserved, before it is written.
function answer(r, req, res, entry, rep, opened) {
  const pre = evaluatePreconditions(req, rep);
  if (pre !== 0) {
    releaseSlot(r, rep);
    if (pre === 412) {
      setVary(res, rep);
      r.sendError(req, res, 412);
    } else if (isHttp2(res)) {
      answerHttp2(res, 304, headFor(r, req, res, rep, 'notModified')); // http2-body.js: HEADERS alone end the stream
    } else {
      writeRepHead(r, req, res, 304, rep, 'notModified').end();
    }
    return finish(opened);
  }
  let range = null;
  const size = rep.stats.size;
  if (rep.coding === null && !rep.wrapped && req.method === 'GET' && size > 0 && req.headers.range !== undefined &&
      ifRangeMatches(req.headers['if-range'], rep)) {
    range = parseRange(req.headers.range, size);
    if (range !== null && range.unsatisfiable) {
      setVary(res, rep);
      res.writeHead(416, { 'Content-Range': `bytes */${size}`, 'Content-Length': 0, 'Accept-Ranges': 'bytes' }).end();
      return finish(opened);
    }
  }
  if (req.method === 'HEAD' || size === 0) {
    releaseSlot(r, rep);
    writeRepHead(r, req, res, 200, rep, 'headers').end(req.method !== 'HEAD' && rep.wrapped ? Buffer.concat([rep.wrapped.head, rep.wrapped.foot]) : undefined);
    return finish(opened);
  }
  return sendBody(r, req, res, entry, rep, range, opened);
}

function finish(opened) {
  if (opened) fs.close(opened.fd, () => {});
}

// Gives back the slot of compressionMaxStreams a representation to be compressed as it streams
// reserved when it was chosen (chooseRepresentation, respondOpened), unless its compressor took it
// over (bodyTransform). Once: every path from the choice that starts no compressor calls it.
function releaseSlot(r, rep) {
  if (rep.slot !== true) return;
  rep.slot = false;
  r.compression.releaseStream();
}

// The status and header object of a 200 or 206 for rep (range: null, or the one range asked for).
function bodyHead(rep, range) {
  if (range === null) return [200, rep.headers];
  return [206, { ...rep.headers, 'Content-Range': `bytes ${range.start}-${range.end}/${rep.stats.size}`, 'Content-Length': range.end - range.start + 1 }];
}

// The head of a 200 or 206 for rep.
function writeBodyHead(r, req, res, rep, range) {
  if (range === null) return writeRepHead(r, req, res, 200, rep, 'headers');
  const [status, headers] = bodyHead(rep, range);
  return writeRepHead(r, req, res, status, rep, null, headers);
}

// The header object to answer rep with: its own object `which` ('headers', 'notModified'), or
// `headers` made for this response. When the fixed headers still wait on the response and nothing
// else was set (http/response.js), they go first into that object, with Vary after them, as they
// would have been set: Node then writes the head straight from it (HTTP/1's writeHead, HTTP/2's
// respondWhole). The object for `which` is made once per representation. Such a head is not kept
// field by field on an HTTP/1 response (res.getHeader answers undefined afterwards, as for any
// head written that way), so the body's length goes to req.svr.bodyBytes for the access log and
// the metrics, whichever way the head goes.
function headFor(r, req, res, rep, which, headers = rep[which]) {
  const length = headers['Content-Length']; // absent for a body compressed as it streams (counted as it goes)
  if (length !== undefined && req.svr !== undefined) req.svr.bodyBytes = length;
  if (!takeDeferred(res, r.fixed)) {
    setVary(res, rep);
    return headers;
  }
  if (which === null) return directHeaders(r.fixed, rep.vary, headers);
  let direct = rep.direct;
  if (direct === undefined || direct.fixed !== r.fixed) {
    direct = { fixed: r.fixed, headers: undefined, notModified: undefined };
    rep.direct = direct;
  }
  if (direct[which] === undefined) direct[which] = directHeaders(r.fixed, rep.vary, headers);
  return direct[which];
}

function writeRepHead(r, req, res, status, rep, which, headers) {
  return res.writeHead(status, headFor(r, req, res, rep, which, headers));
}

// Vary: Accept-Encoding on a response for a compressible file, added to what is there.
function setVary(res, rep) {
  if (rep.vary) appendVary(res, 'Accept-Encoding');
}

// fixed, then Vary (when vary), then headers, as setHeader would have left them: a later value
// replaces an earlier one of the same name (in any case) where the earlier one stood.
function directHeaders(fixed, vary, headers) {
  const byName = new Map(); // lower-case name -> [name, value]; a Map keeps the first one's place
  const put = (name, value) => byName.set(name.toLowerCase(), [name, value]);
  for (const [name, value] of fixed) put(name, value);
  if (vary) {
    const had = byName.get('vary');
    put('Vary', varyWith(had === undefined ? undefined : had[1], 'Accept-Encoding'));
  }
  for (const name of Object.keys(headers)) put(name, headers[name]);
  const out = {};
  for (const [name, value] of byName.values()) out[name] = value;
  return out;
}

function sendBuffer(r, req, res, rep, range, data) {
  const body = range === null ? data : data.subarray(range.start, range.end + 1);
  if (isHttp2(res)) { // http2-body.js: in one go or in slices
    if (range === null) return answerHttp2(res, 200, headFor(r, req, res, rep, 'headers'), body);
    const [status, headers] = bodyHead(rep, range);
    return answerHttp2(res, status, headFor(r, req, res, rep, null, headers), body);
  }
  writeBodyHead(r, req, res, rep, range);
  return res.end(body);
}

// 4. The body: from memory when the representation is (or can be) held there, else streamed.
function sendBody(r, req, res, entry, rep, range, opened) {
  if (rep.data !== undefined) {
    sendBuffer(r, req, res, rep, range, rep.data);
    return finish(opened);
  }
  if (!opened && rep.inMemory) {
    const kept = rep.sibling ? undefined : r.cache.kept(entry);
    if (kept !== undefined) return sendBuffer(r, req, res, rep, range, kept);
    const reading = rep.sibling
      ? r.cache.siblingContent(entry, `file-${rep.coding}`, rep.file, rep.stats)
      : r.cache.content(entry);
    return reading.then((data) => (data === null ? streamBody(r, req, res, entry, rep, range) : sendBuffer(r, req, res, rep, range, data)));
  }
  return streamBody(r, req, res, entry, rep, range, opened);
}

// One descriptor, checked to be the version the answer was decided for; if the file changed
// since the stat, the answer is decided again for what was opened (the slot reserved for the old
// decision given back first). A client gone, an open that fails or a throw before the compressor
// starts gives the slot back too.
async function streamBody(r, req, res, entry, rep, range, opened) {
  try {
    if (!opened) {
      if (gone(req, res)) return releaseSlot(r, rep);
      opened = await openAt(r, rep.file);
      if (!sameFile(opened.stats, rep.stats)) {
        releaseSlot(r, rep);
        return respondOpened(r, req, res, entry, rep, opened);
      }
    }
    if (gone(req, res)) {
      releaseSlot(r, rep);
      return finish(opened);
    }
    writeBodyHead(r, req, res, rep, range);
    const start = range === null ? 0 : range.start;
    const end = range === null ? rep.stats.size - 1 : range.end; // never past what was announced
    const source = openBodyStream(r, opened.fd, start, end, isHttp2(res));
    const transform = bodyTransform(r, req, rep); // last: nothing that may throw between it and the pipeline that closes it
    destroyWithConnection(req, res);
    const done = (err) => { if (err && !res.destroyed) res.destroy(); };
    if (transform) stream.pipeline(source, transform, res, done);
    else stream.pipeline(source, res, done);
    return undefined;
  } catch (err) {
    releaseSlot(r, rep);
    throw err;
  }
}

// A descriptor for `file`, shown to be at that path (site.webRoot) and a regular file (not a
// FIFO or device swapped in since the path was checked), with its stats.
async function openAt(r, file) {
  const fd = await openFile(file, r.webRoot.flags);
  try {
    const stats = r.webRoot.fileAt(fd, file);
    if (stats === null) throw notHere();
    return { fd, stats };
  } catch (err) {
    fs.close(fd, () => {});
    throw err;
  }
}

// http2: read in http2-body.js's slices (what a cancel may leave counted against the session).
function openBodyStream(r, fd, start, end, http2) {
  if (http2) return fs.createReadStream(null, { fd, start, end, autoClose: true, highWaterMark: SLICE_BYTES });
  const large = r.chunks.large < LARGE_CHUNK_STREAMS;
  const source = fs.createReadStream(null, { fd, start, end, autoClose: true, highWaterMark: large ? LARGE_CHUNK_BYTES : SMALL_CHUNK_BYTES });
  if (large) {
    r.chunks.large++;
    source.once('close', () => { r.chunks.large--; });
  }
  return source;
}

// What the file's bytes go through on their way out, or null: the compressor of a streamed
// compressed representation, or the head and foot around a wrapped page.
function bodyTransform(r, req, rep) {
  if (rep.compressStream) {
    const transform = r.compression.createStream(rep.coding);
    rep.slot = false; // the compressor's now: given back when it closes
    countCompressedBytes(req, transform);
    return transform;
  }
  if (rep.wrapped) return wrapBody(rep.wrapped, rep.stats.size);
  return null;
}

// head + the file's `size` bytes + foot. A file that shrank since the stat cannot fill the
// announced length: the stream fails, and the response is cut rather than ended short.
function wrapBody({ head, foot }, size) {
  let seen = 0;
  const wrap = new stream.Transform({
    transform(chunk, encoding, callback) {
      seen += chunk.length;
      callback(null, chunk);
    },
    flush(callback) {
      if (seen !== size) return callback(Object.assign(new Error('the file shrank while it was sent'), { code: 'ESHRANK' }));
      return callback(null, foot);
    },
  });
  if (head.length > 0) wrap.push(head);
  return wrap;
}

// No Content-Length for the access log to report: count what the compressor produced.
function countCompressedBytes(req, transform) {
  req.svr.bodyBytes = 0;
  transform.on('data', (chunk) => { req.svr.bodyBytes += chunk.length; });
}

// The file changed between the stat and the open: decide again for the version that was opened.
function respondOpened(r, req, res, staleEntry, staleRep, opened) {
  if (!opened.stats.isFile()) {
    finish(opened);
    return r.sendError(req, res, 404);
  }
  if (staleRep.sibling) {
    const facts = fileFacts(r, staleEntry, staleEntry.rel);
    const tail = siblingTail(opened.stats, staleRep.coding);
    const rep = { ...encodedRep(facts, staleRep.coding, tail, opened.stats.size), file: staleRep.file, stats: opened.stats, sibling: true };
    return answer(r, req, res, staleEntry, rep, opened);
  }
  const entry = r.cache.entry(staleEntry.real, opened.stats);
  entry.rel = staleEntry.rel;
  entry.verified = true; // opened is a checked descriptor
  if (wraps(r, entry.real)) return answer(r, req, res, entry, wrappedRep(r, entry.real, opened.stats), opened);
  const facts = fileFacts(r, entry, entry.rel);
  const coding = facts.compressible && req.headers.range === undefined
    ? r.compression.negotiate(req.headers['accept-encoding']) : null;
  const rep = coding === null || !r.compression.reserveStream(opened.stats.size)
    ? { ...facts.identity, inMemory: false }
    : { ...encodedRep(facts, coding, coding), file: entry.real, stats: opened.stats, compressStream: true, slot: true };
  return answer(r, req, res, entry, rep, opened);
}

function respond(r, req, res, { real, rel, stats }) {
  const entry = r.cache.entry(real, stats);
  entry.rel = rel;
  if (!entry.verified) {
    let opened;
    try {
      opened = r.webRoot.openSync(real);
    } catch (err) {
      return failed(r, req, res, err); // EACCES -> 403, ELOOP (a final link) -> 404 ...
    }
    if (opened === null) return r.sendError(req, res, 404);
    if (!sameFile(opened.stats, stats)) { // changed since the check: answer for what was opened
      return caught(r, req, res, respondOpened(r, req, res, entry, { sibling: false }, opened));
    }
    fs.closeSync(opened.fd);
    entry.verified = true;
  }
  const facts = fileFacts(r, entry, rel);
  const rep = chooseRepresentation(r, req, res, entry, facts);
  const result = typeof rep.then === 'function'
    ? rep.then((chosen) => answer(r, req, res, entry, chosen))
    : answer(r, req, res, entry, rep);
  return caught(r, req, res, result);
}

// A result that may be a promise, its rejection answered.
function caught(r, req, res, result) {
  return result && typeof result.then === 'function' ? result.catch((err) => failed(r, req, res, err)) : result;
}

function failed(r, req, res, err) {
  if (res.headersSent) return res.destroy(); // all the client can learn is that the body is cut short
  const status = errorStatus(err);
  return r.sendError(req, res, status, { error: status === 500 ? err : undefined });
}

module.exports = { createResponder };
