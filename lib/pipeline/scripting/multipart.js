'use strict';
// multipart/form-data for parsePostData, with busboy (a well-kept streaming parser: RFC 7578
// details such as quoted and encoded filenames, header limits and malformed input are its
// business, not ours). The hand-written parser it replaces wrote each file with writeFileSync
// on the event loop (attack report, finding 15: 4 clients sending 8,000 one-byte files pushed
// static files to a 1 s median). Here the body is fed to busboy in the chunks it arrived in,
// and each file part is written to its temporary file asynchronously, a few at a time.
//
//   parseMultipart(chunks, contentType, tempDir) -> Promise<{ fields, files, tempFiles }>
//   rejects with { status: 400 | 413, message } for a malformed body or too many parts.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const busboy = require('busboy');

const MAX_FILES = 1000; // file parts per request (formidable has maxFiles; 8,000 were sent above)
const MAX_FIELDS = 1000; // formidable's maxFields default
const WRITE_CONCURRENCY = 4; // temporary files being written at once, per request

function addValue(object, name, value) {
  if (!Object.hasOwn(object, name)) object[name] = value;
  else if (Array.isArray(object[name])) object[name].push(value);
  else object[name] = [object[name], value];
}

function removeFiles(files) {
  for (const file of files) fs.unlink(file, () => {});
}

function parseMultipart(chunks, contentType, tempDir, BodyError) {
  return new Promise((resolve, reject) => {
    let parser;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { files: MAX_FILES, fields: MAX_FIELDS }, defParamCharset: 'utf8' });
    } catch (error) {
      reject(new BodyError(400, `malformed multipart body: ${error.message}`));
      return;
    }
    const fields = {};
    const files = {};
    const tempFiles = [];
    const writes = createWriteQueue(WRITE_CONCURRENCY);
    let failed = null;
    const fail = (error) => { if (!failed) failed = error; };

    parser.on('field', (name, value) => addValue(fields, name, value));
    parser.on('file', (name, stream, info) => {
      const parts = [];
      let size = 0;
      stream.on('data', (data) => { parts.push(data); size += data.length; });
      stream.on('end', () => {
        const newFilename = `svr-upload-${crypto.randomBytes(12).toString('hex')}`;
        const filepath = path.join(tempDir, newFilename);
        tempFiles.push(filepath);
        addValue(files, name, {
          filepath,
          newFilename,
          originalFilename: path.basename(String(info.filename || '').replace(/\\/g, '/')),
          mimetype: info.mimeType || 'application/octet-stream',
          size,
        });
        writes.add(() => fs.promises.writeFile(filepath, Buffer.concat(parts, size), { mode: 0o600 }));
      });
    });
    parser.on('filesLimit', () => fail(new BodyError(413, `more than ${MAX_FILES} files in one multipart body`)));
    parser.on('fieldsLimit', () => fail(new BodyError(413, `more than ${MAX_FIELDS} fields in one multipart body`)));
    parser.on('error', (error) => fail(new BodyError(400, `malformed multipart body: ${error.message}`)));
    parser.on('close', () => {
      writes.done().then(() => {
        if (failed) throw failed;
        resolve({ fields, files, tempFiles });
      }).catch((error) => {
        removeFiles(tempFiles);
        reject(error);
      });
    });
    feed(parser, chunks, () => failed !== null);
  });
}

// One chunk per turn of the event loop, as the body arrived: a large body never parses in one go.
// Once the body is refused (stop()), the rest is not parsed.
function feed(parser, chunks, stop) {
  let index = 0;
  const next = () => {
    if (index === chunks.length || stop()) { parser.end(); return; }
    parser.write(chunks[index++]);
    setImmediate(next);
  };
  next();
}

// Runs queued async jobs, at most `limit` at a time; done() resolves after every job (rejects
// with the first failure).
function createWriteQueue(limit) {
  const queue = [];
  let running = 0;
  let failure = null;
  let idle = null;
  const pump = () => {
    while (running < limit && queue.length > 0) {
      const job = queue.shift();
      running++;
      job().catch((error) => { if (!failure) failure = error; }).finally(() => { running--; pump(); });
    }
    if (running === 0 && queue.length === 0 && idle) idle();
  };
  return {
    add(job) { queue.push(job); pump(); },
    done: () => new Promise((resolve, reject) => {
      idle = () => (failure ? reject(failure) : resolve());
      pump();
    }),
  };
}

module.exports = { parseMultipart, removeFiles, MAX_FILES };
