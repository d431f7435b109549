'use strict';
// parsePostData for server-side scripts: reads the request body (at most maxPostDataSize bytes,
// else 413) and parses it by Content-Type:
//   application/x-www-form-urlencoded  -> fields (querystring.parse: repeated names give arrays)
//   application/json, *+json           -> fields = the parsed object
//   multipart/form-data                -> fields, and files written to the temporary directory as
//                                         { filepath, newFilename, originalFilename, mimetype, size }
//                                         (formidable's names), deleted when the response closes;
//                                         parsed by busboy, written asynchronously (multipart.js)
//   anything else                      -> empty fields and files; the raw body is the 3rd argument
// The whole body is buffered (bounded by maxPostDataSize, and per worker by maxPostDataInFlight).
// SVR.JS used formidable; its options argument is accepted for compatibility and ignored.

const os = require('node:os');
const querystring = require('node:querystring');
const { parseMultipart, removeFiles } = require('./multipart');

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
const RETRY_AFTER_S = 5; // bodies held now are done by then, usually

class BodyError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Body bytes buffered at once by all the requests of this worker (attack report, finding 10:
// 1,500 held 1 MiB uploads took two workers to +1 GiB). Beyond budget.max a request gets 503.
function createBodyBudget(max) {
  return { max: Number.isInteger(max) && max > 0 ? max : Infinity, used: 0 };
}

// Reads the body; callback(error, buffer). error.status: 413 (too large), 503 (the worker's
// budget for buffered bodies is spent) or 400 (aborted).
function readBody(req, limit, callback, budget = createBodyBudget(0)) {
  let done = false;
  const chunks = [];
  let counted = 0; // this request's share of the budget, given back once it is done
  const finish = (error, body, parts) => {
    if (done) return;
    done = true;
    budget.used -= counted;
    counted = 0;
    if (error) chunks.length = 0;
    callback(error, body, parts);
  };
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    return finish(new BodyError(413, `the body (${declared} bytes) is larger than maxPostDataSize (${limit})`));
  }
  let size = 0;
  req.on('data', (chunk) => {
    if (done) return;
    size += chunk.length;
    if (size > limit) {
      finish(new BodyError(413, `the body is larger than maxPostDataSize (${limit})`));
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
  req.on('end', () => finish(null, Buffer.concat(chunks, size), chunks));
  req.on('aborted', () => finish(new BodyError(400, 'the client aborted the request')));
  req.on('error', (error) => finish(new BodyError(400, `cannot read the body: ${error.message}`)));
}

function mediaType(contentType) {
  return String(contentType || '').split(';')[0].trim().toLowerCase();
}

function contentTypeParam(contentType, name) {
  const re = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]*))`, 'i');
  const match = re.exec(String(contentType || ''));
  return match ? (match[1] ?? match[2]) : undefined;
}

// Returns { fields, files, tempFiles } (a promise of it for multipart) or throws BodyError(400).
// chunks: the body as it arrived, for the multipart parser to take one at a time.
function parseBody(body, contentType, tempDir, chunks) {
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
  if (type === 'multipart/form-data') {
    const boundary = contentTypeParam(contentType, 'boundary');
    if (!boundary) throw new BodyError(400, 'multipart/form-data without a boundary');
    return parseMultipart(chunks || [body], contentType, tempDir, BodyError);
  }
  return { fields: {}, files: {}, tempFiles: [] };
}

// Builds the per-request parsePostData([options,] callback(fields, files, rawBody)).
// fail(status, error, headers) answers the request with an error page.
// budget: createBodyBudget(maxPostDataInFlight), one per worker.
function createParsePostData(req, res, { limit, fail, budget, tempDir = os.tmpdir() }) {
  return function parsePostData(options, callback) {
    if (typeof options === 'function' && callback === undefined) callback = options;
    if (typeof callback !== 'function') throw new TypeError('parsePostData needs a callback(fields, files)');
    if (!BODY_METHODS.has(req.method)) {
      fail(405, undefined, { Allow: 'POST, PUT, PATCH' });
      return;
    }
    readBody(req, limit, (error, body, chunks) => {
      if (error) {
        if (error.status === 413 || error.status === 503) {
          // Tell the client to stop sending, and read (and drop) what is still on its way.
          res.setHeader('Connection', 'close');
          req.resume();
        }
        fail(error.status, undefined, error.status === 503 ? { 'Retry-After': String(RETRY_AFTER_S) } : undefined);
        return;
      }
      // A malformed body is the client's fault (400, 413); anything else (a full disk while saving
      // an upload, say) is ours: a 500 for this request, not an uncaught exception.
      const parseFailed = (parseError) => (parseError instanceof BodyError ? fail(parseError.status, undefined) : fail(500, parseError));
      const deliver = (parsed) => {
        if (parsed.tempFiles.length > 0) res.once('close', () => removeFiles(parsed.tempFiles));
        try {
          callback(parsed.fields, parsed.files, body);
        } catch (callbackError) {
          fail(500, callbackError);
        }
      };
      let parsed;
      try {
        parsed = parseBody(body, req.headers['content-type'], tempDir, chunks);
      } catch (parseError) {
        parseFailed(parseError);
        return;
      }
      if (typeof parsed.then === 'function') parsed.then(deliver, parseFailed);
      else deliver(parsed);
    }, budget);
  };
}

module.exports = { createParsePostData, createBodyBudget, readBody, parseBody, BodyError, BODY_METHODS };
