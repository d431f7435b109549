'use strict';
// parsePostData for server-side scripts and legacy mods: reads a POST body and parses it by
// Content-Type, with formidable's result shapes (SVR.JS used formidable):
//   multipart/form-data                -> streamed with busboy (mscdex's parser, used by multer:
//                                         RFC 7578 edge cases our own would miss): fields in memory,
//                                         files written to the temporary directory as they arrive, as
//                                         { filepath, newFilename, originalFilename, mimetype, size },
//                                         deleted when the response closes. The whole body may be up
//                                         to maxPostDataSize (200 MiB by default: formidable's order
//                                         of magnitude); no raw body (3rd argument undefined)
//   application/x-www-form-urlencoded  -> fields (querystring.parse: repeated names give arrays)
//   application/json, *+json           -> fields = the parsed object
//   anything else                      -> empty fields and files; the raw body is the 3rd argument
// Bodies other than multipart are held in memory: at most min(maxPostDataSize, 20 MiB), as
// formidable's 20 MB limit for fields. Over a limit: 413; malformed: 400; another method: 405.
// SVR.JS's formidable options argument is accepted for compatibility and ignored.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const querystring = require('node:querystring');
// Loaded when a worker builds its scripting stage (setBodyBudget), never on a request path: a
// require that fails there (EMFILE, say) would fail that way for later requests too. A worker
// without server-side JavaScript never loads it.
let busboy = null;
const loadBusboy = () => (busboy ??= require('busboy'));
const { mediaType } = require('../../http/headers');

const MAX_BUFFERED_BYTES = 20 * 1024 * 1024;
const MAX_FILES = 1000; // file parts per request (formidable's maxFiles order; a hostile form can hold thousands)
// File parts a worker writes (or removes) at once. Each is opened, written and closed on libuv's thread pool
// (4 threads), which static files use too: 4 bodies of 1,000 parts queued 12,000 operations at
// once, and static requests waited behind them (seconds). The others wait their turn here, off
// the pool; their bytes stay in busboy's streams, which stop the parser when they fill.
const MULTIPART_WRITES_AT_ONCE = 2;
const PARSE_SLICE_BYTES = 8 * 1024;
const writeSlots = { free: MULTIPART_WRITES_AT_ONCE, waiting: [] };

// run(release) once a slot is free; release() gives it back.
function whenSlotFree(run) {
  const release = () => {
    const next = writeSlots.waiting.shift();
    if (next) setImmediate(next); // not nested: a refused body's parts release one after another
    else writeSlots.free++;
  };
  const start = () => run(once(release));
  if (writeSlots.free > 0) {
    writeSlots.free--;
    start();
  } else {
    writeSlots.waiting.push(start);
  }
}

function once(fn) {
  let called = false;
  return () => {
    if (called) return;
    called = true;
    fn();
  };
}
const MAX_FIELDS = 1000; // formidable's maxFields default
const RETRY_AFTER_S = 5; // bodies held now are done by then, usually

class BodyError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Reads the body; callback(error, buffer). error.status: 413 (too large) or 400 (aborted).
// Body bytes buffered in memory at once by all the requests of this worker (without a cap, 1,500
// held 1 MiB uploads took two workers to +1 GiB). Beyond budget.max: 503.
// Multipart bodies are not buffered (their files go to disk as they arrive), so they do not count.
function createBodyBudget(max) {
  return { max: Number.isInteger(max) && max > 0 ? max : Infinity, used: 0 };
}

// The one budget of this worker process; the scripting stage sets its size from the config.
const workerBudget = createBodyBudget(0);
function setBodyBudget(max) {
  loadBusboy();
  workerBudget.max = createBodyBudget(max).max;
}

// Reads the body; callback(error, buffer). error.status: 413 (too large), 503 (the worker's
// budget for buffered bodies is spent) or 400 (aborted).
function readBody(req, limit, callback, budget = createBodyBudget(0)) {
  let done = false;
  let counted = 0; // this request's share of the budget, given back once it is done
  const finish = (error, body) => {
    if (done) return;
    done = true;
    budget.used -= counted;
    counted = 0;
    callback(error, body);
  };
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    return finish(new BodyError(413, `the body (${declared} bytes) is larger than maxPostDataSize (${limit})`));
  }
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    if (done) return;
    size += chunk.length;
    if (size > limit) {
      finish(new BodyError(413, `the body is larger than the ${limit} bytes allowed`));
      return;
    }
    if (budget.used + chunk.length > budget.max) {
      finish(new BodyError(503, `this worker already buffers ${budget.used} bytes of request bodies (maxPostDataInFlight ${budget.max})`));
      return;
    }
    budget.used += chunk.length;
    counted += chunk.length;
    chunks.push(chunk);
  });
  req.on('end', () => finish(null, Buffer.concat(chunks, size)));
  req.on('aborted', () => finish(new BodyError(400, 'the client aborted the request')));
  req.on('error', (error) => finish(new BodyError(400, `cannot read the body: ${error.message}`)));
}

// Returns { fields, files, tempFiles } or throws BodyError(400).
function parseBody(body, contentType) {
  const type = mediaType(contentType);
  if (type === 'application/x-www-form-urlencoded') {
    return { fields: { ...querystring.parse(body.toString('utf8')) }, files: {}, tempFiles: [] };
  }
  if (type === 'application/json' || type.endsWith('+json')) {
    let value;
    try {
      value = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new BodyError(400, `invalid JSON body: ${error.message}`);
    }
    const fields = value && typeof value === 'object' && !Array.isArray(value) ? value : {};
    return { fields, files: {}, tempFiles: [] };
  }
  return { fields: {}, files: {}, tempFiles: [] };
}

function addValue(object, name, value) {
  if (!Object.hasOwn(object, name)) object[name] = value;
  else if (Array.isArray(object[name])) object[name].push(value);
  else object[name] = [object[name], value];
}

// multipart/form-data, streamed: callback(error, { fields, files, tempFiles }).
function parseMultipart(req, limit, tempDir, callback) {
  let parser;
  try {
    parser = loadBusboy()({ headers: req.headers, limits: { fieldSize: MAX_BUFFERED_BYTES, fields: MAX_FIELDS, files: MAX_FILES } });
  } catch (error) {
    return callback(new BodyError(400, `malformed multipart/form-data: ${error.message}`));
  }
  const fields = {};
  const files = {};
  const tempFiles = [];
  const outs = [];
  const writes = [];
  // The parts' file names: one random prefix per body, as unguessable as a name of its own random
  // bytes, numbered by part: one call into the random number generator per body, not per part.
  const namePrefix = `svr-upload-${crypto.randomBytes(12).toString('hex')}-`;
  let partCount = 0;
  let total = 0;
  let failed = false;
  let stopFeeding = null;
  const fail = (error) => {
    if (failed) return;
    failed = true;
    stopFeeding();
    req.resume();
    // A write stream opens its file later, on the thread pool: unlinking before that open would
    // leave the file behind (an attacker's 8,000 parts left ~400 empty files in /tmp each). So
    // stop every write and unlink only once its stream has closed.
    for (const out of outs) out.destroy();
    Promise.all(writes).then(() => removeFiles(tempFiles));
    callback(error);
  };
  const count = (bytes) => {
    total += bytes;
    if (total > limit) fail(new BodyError(413, `the body is larger than maxPostDataSize (${limit})`));
  };
  parser.on('field', (name, value, info) => {
    if (info.valueTruncated) return fail(new BodyError(413, `the field "${name}" is larger than ${MAX_BUFFERED_BYTES} bytes`));
    // busboy decodes a field by its part's charset, and gives no value for a charset it does not know
    if (typeof value !== 'string') return fail(new BodyError(400, `the field "${name}" is in a charset svr cannot read (${info.encoding})`));
    count(Buffer.byteLength(value));
    addValue(fields, name, value);
    return undefined;
  });
  const malformed = (error) => fail(new BodyError(400, `malformed multipart/form-data: ${error.message}`));
  parser.on('file', (name, stream, info) => {
    // busboy destroys the open part's stream when the body ends inside it ("Unexpected end of
    // form"): without a listener that error would be uncaught, and the worker replaced.
    stream.on('error', malformed);
    if (failed) return stream.resume();
    const newFilename = namePrefix + partCount++;
    const filepath = path.join(tempDir, newFilename);
    tempFiles.push(filepath);
    const file = {
      filepath,
      newFilename,
      originalFilename: path.basename(String(info.filename || '').replace(/\\/g, '/')),
      mimetype: info.mimeType || 'application/octet-stream',
      size: 0,
    };
    addValue(files, name, file);
    stream.pause();
    writes.push(new Promise((resolve) => whenSlotFree((release) => {
      if (failed) { // refused while it waited: never written
        release();
        stream.resume();
        return resolve();
      }
      const out = fs.createWriteStream(filepath, { mode: 0o600 });
      outs.push(out);
      out.once('close', () => { release(); resolve(); });
      out.on('error', (error) => fail(error)); // a full disk, say: the server's fault (500)
      stream.on('data', (chunk) => {
        file.size += chunk.length;
        count(chunk.length);
        if (failed) out.destroy();
      });
      stream.pipe(out);
      return undefined;
    })));
    return undefined;
  });
  parser.on('error', malformed);
  parser.on('close', () => {
    if (failed) return;
    Promise.all(writes).then(() => {
      if (!failed) callback(null, { fields, files, tempFiles });
    });
  });
  const tooMany = (what, max) => () => fail(new BodyError(413, `more than ${max} ${what} in one multipart body`));
  parser.on('filesLimit', tooMany('files', MAX_FILES));
  parser.on('fieldsLimit', tooMany('fields', MAX_FIELDS));
  req.on('aborted', () => fail(new BodyError(400, 'the client aborted the request')));
  stopFeeding = feedInSlices(req, parser, () => failed, fail);
  return undefined;
}

// busboy parses a whole received chunk at once, with every part's events: 64 KiB of one-byte
// file parts is some 400 parts, tens of milliseconds on a busy machine. The worker feeds its
// parsers PARSE_SLICE_BYTES per turn of the event loop in all, the bodies waiting taking turns, so
// other requests and new connections get their turn however many bodies arrive at once (a budget
// per body let 4 bodies take four times as long of every turn).
const slicing = { waiting: [], scheduled: false };

// feed(budget) parses up to budget bytes and returns how many it parsed.
function feedSoon(feed) {
  slicing.waiting.push(feed);
  if (!slicing.scheduled) {
    slicing.scheduled = true;
    setImmediate(feedThisTurn);
  }
}

function feedThisTurn() {
  slicing.scheduled = false;
  let budget = PARSE_SLICE_BYTES;
  while (budget > 0 && slicing.waiting.length > 0) budget -= slicing.waiting.shift()(budget);
  if (slicing.waiting.length > 0 && !slicing.scheduled) {
    slicing.scheduled = true;
    setImmediate(feedThisTurn);
  }
}

// Returns stop(): no more bytes go to the parser. An exception while parsing (in busboy or in a
// part's handler) fails this body alone (onThrow: a 500): thrown out of feedThisTurn, it would
// leave the other bodies queued behind it unfed while the worker retires.
function feedInSlices(req, parser, stopped, onThrow) {
  let feeding = false;
  let ended = false; // 'end' may come while the last chunk is still being fed
  // parser.write or parser.end; false when it threw (the body has failed)
  const guarded = (call) => {
    try {
      return call();
    } catch (error) {
      onThrow(error);
      return false;
    }
  };
  const onData = (chunk) => {
    req.pause();
    feeding = true;
    let offset = 0;
    const feed = (budget) => {
      if (stopped()) return 0;
      const slice = chunk.subarray(offset, offset + budget);
      offset += slice.length;
      const more = guarded(() => parser.write(slice));
      if (stopped()) return slice.length;
      if (offset < chunk.length) {
        feedSoon(feed);
        return slice.length;
      }
      feeding = false;
      if (ended) guarded(() => parser.end());
      else if (more) req.resume();
      else parser.once('drain', () => req.resume());
      return slice.length;
    };
    feedSoon(feed);
  };
  const onEnd = () => {
    ended = true;
    if (!feeding && !stopped()) guarded(() => parser.end());
  };
  req.on('data', onData);
  req.once('end', onEnd);
  return () => {
    req.off('data', onData);
    req.off('end', onEnd);
  };
}

function removeFiles(files) {
  for (const file of files) whenSlotFree((release) => fs.unlink(file, release));
}

// Builds the per-request parsePostData([options,] callback(fields, files, rawBody)).
// fail(status, error, headers) answers the request with an error page; res.error(status, error,
// headers) unless given (so that the options can be one object for every request).
// budget: the worker's (setBodyBudget) unless another is given. tempDir: where file parts go,
// os.tmpdir() unless given, asked only when a multipart body comes: os.tmpdir() reads TMPDIR, TMP
// and TEMP, each behind a check of the process's credentials (18 syscalls, ~2.4 µs of CPU), and
// this runs for every request a legacy mod or serverSideScript.js sees.
function createParsePostData(req, res, { limit, fail: givenFail, budget = workerBudget, tempDir }) {
  return function parsePostData(options, callback) {
    const fail = givenFail || ((status, error, headers) => res.error(status, error, headers));
    if (typeof options === 'function' && callback === undefined) callback = options;
    if (typeof callback !== 'function') throw new TypeError('parsePostData needs a callback(fields, files)');
    if (req.method !== 'POST') { // as SVR.JS: parsePostData is for POST
      fail(405, undefined, { Allow: 'POST' });
      return;
    }
    const answer = (error, parsed, body) => {
      if (error) {
        if (error.status === 413 || error.status === 503) {
          // Tell the client to stop sending, and read (and drop) what is still on its way.
          res.setHeader('Connection', 'close');
          req.resume();
        }
        // A malformed body is the client's fault (400); anything else (a full disk while saving
        // an upload, say) is ours: a 500 for this request, not an uncaught exception.
        if (error instanceof BodyError) fail(error.status, undefined, error.status === 503 ? { 'Retry-After': String(RETRY_AFTER_S) } : undefined);
        else fail(500, error);
        return;
      }
      if (parsed.tempFiles.length > 0) res.once('close', () => removeFiles(parsed.tempFiles));
      try {
        callback(parsed.fields, parsed.files, body);
      } catch (callbackError) {
        fail(500, callbackError);
      }
    };
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) {
      return answer(new BodyError(413, `the body (${declared} bytes) is larger than maxPostDataSize (${limit})`));
    }
    if (mediaType(req.headers['content-type']) === 'multipart/form-data') {
      return parseMultipart(req, limit, tempDir ?? os.tmpdir(), answer);
    }
    readBody(req, Math.min(limit, MAX_BUFFERED_BYTES), (error, body) => {
      if (error) return answer(error);
      let parsed;
      try {
        parsed = parseBody(body, req.headers['content-type']);
      } catch (parseError) {
        return answer(parseError);
      }
      return answer(null, parsed, body);
    }, budget);
    return undefined;
  };
}

module.exports = { createParsePostData, createBodyBudget, setBodyBudget, readBody, parseBody, BodyError, MULTIPART_WRITES_AT_ONCE, PARSE_SLICE_BYTES };
