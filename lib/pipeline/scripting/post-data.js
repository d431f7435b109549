'use strict';
// parsePostData for server-side scripts: reads the request body (at most maxPostDataSize bytes,
// else 413) and parses it by Content-Type, without a dependency:
//   application/x-www-form-urlencoded  -> fields (querystring.parse: repeated names give arrays)
//   application/json, *+json           -> fields = the parsed object
//   multipart/form-data                -> fields, and files written to the temporary directory as
//                                         { filepath, newFilename, originalFilename, mimetype, size }
//                                         (formidable's names), deleted when the response closes
//   anything else                      -> empty fields and files; the raw body is the 3rd argument
// The whole body is buffered (it is bounded by the limit), which keeps the parser small.
// SVR.JS used formidable; its options argument is accepted for compatibility and ignored.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const querystring = require('node:querystring');
const { mediaType } = require('../../http/headers');

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

class BodyError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Reads the body; callback(error, buffer). error.status: 413 (too large) or 400 (aborted).
function readBody(req, limit, callback) {
  let done = false;
  const finish = (error, body) => {
    if (done) return;
    done = true;
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
      finish(new BodyError(413, `the body is larger than maxPostDataSize (${limit})`));
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => finish(null, Buffer.concat(chunks, size)));
  req.on('aborted', () => finish(new BodyError(400, 'the client aborted the request')));
  req.on('error', (error) => finish(new BodyError(400, `cannot read the body: ${error.message}`)));
}

function contentTypeParam(contentType, name) {
  const re = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]*))`, 'i');
  const match = re.exec(String(contentType || ''));
  return match ? (match[1] ?? match[2]) : undefined;
}

// Returns { fields, files, tempFiles } or throws BodyError(400).
function parseBody(body, contentType, tempDir) {
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
    return parseMultipart(body, boundary, tempDir);
  }
  return { fields: {}, files: {}, tempFiles: [] };
}

function addValue(object, name, value) {
  if (!Object.hasOwn(object, name)) object[name] = value;
  else if (Array.isArray(object[name])) object[name].push(value);
  else object[name] = [object[name], value];
}

// RFC 7578 on a buffered body: parts between "--boundary" lines, each with headers.
function parseMultipart(body, boundary, tempDir) {
  const fields = {};
  const files = {};
  const tempFiles = [];
  const delimiter = Buffer.from(`--${boundary}`);
  let position = body.indexOf(delimiter);
  if (position === -1) throw new BodyError(400, 'multipart body without its boundary');
  try {
    for (;;) {
      position += delimiter.length;
      if (body[position] === 0x2d && body[position + 1] === 0x2d) break; // "--": the end
      const headerStart = body.indexOf('\r\n', position) + 2;
      const headerEnd = body.indexOf('\r\n\r\n', headerStart);
      if (headerStart < 2 || headerEnd === -1) throw new BodyError(400, 'malformed multipart part');
      const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headerEnd);
      if (next === -1) throw new BodyError(400, 'multipart body ends without its closing boundary');
      const headers = parsePartHeaders(body.toString('utf8', headerStart, headerEnd));
      const content = body.subarray(headerEnd + 4, next);
      const disposition = headers['content-disposition'] || '';
      const name = contentTypeParam(`x; ${disposition.replace(/^[^;]*;?/, '')}`, 'name');
      if (name === undefined) throw new BodyError(400, 'multipart part without a name');
      const filename = contentTypeParam(`x; ${disposition.replace(/^[^;]*;?/, '')}`, 'filename');
      if (filename === undefined) {
        addValue(fields, name, content.toString('utf8'));
      } else {
        const newFilename = `svr-upload-${crypto.randomBytes(12).toString('hex')}`;
        const filepath = path.join(tempDir, newFilename);
        fs.writeFileSync(filepath, content, { mode: 0o600 });
        tempFiles.push(filepath);
        addValue(files, name, {
          filepath,
          newFilename,
          originalFilename: path.basename(filename.replace(/\\/g, '/')),
          mimetype: headers['content-type'] || 'application/octet-stream',
          size: content.length,
        });
      }
      position = next + 2;
    }
  } catch (error) {
    removeFiles(tempFiles);
    throw error;
  }
  return { fields, files, tempFiles };
}

function parsePartHeaders(text) {
  const headers = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

function removeFiles(files) {
  for (const file of files) fs.unlink(file, () => {});
}

// Builds the per-request parsePostData([options,] callback(fields, files, rawBody)).
// fail(status, error, headers) answers the request with an error page.
function createParsePostData(req, res, { limit, fail, tempDir = os.tmpdir() }) {
  return function parsePostData(options, callback) {
    if (typeof options === 'function' && callback === undefined) callback = options;
    if (typeof callback !== 'function') throw new TypeError('parsePostData needs a callback(fields, files)');
    if (!BODY_METHODS.has(req.method)) {
      fail(405, undefined, { Allow: 'POST, PUT, PATCH' });
      return;
    }
    readBody(req, limit, (error, body) => {
      if (error) {
        if (error.status === 413) {
          // Tell the client to stop sending, and read (and drop) what is still on its way.
          res.setHeader('Connection', 'close');
          req.resume();
        }
        fail(error.status, undefined);
        return;
      }
      let parsed;
      try {
        parsed = parseBody(body, req.headers['content-type'], tempDir);
      } catch (parseError) {
        // A malformed body is the client's fault (400); anything else (a full disk while saving
        // an upload, say) is ours: a 500 for this request, not an uncaught exception.
        if (parseError instanceof BodyError) fail(parseError.status, undefined);
        else fail(500, parseError);
        return;
      }
      if (parsed.tempFiles.length > 0) res.once('close', () => removeFiles(parsed.tempFiles));
      try {
        callback(parsed.fields, parsed.files, body);
      } catch (callbackError) {
        fail(500, callbackError);
      }
    });
  };
}

module.exports = { createParsePostData, readBody, parseBody, BodyError, BODY_METHODS };
