'use strict';
// A request body read whole before an upstream is asked (a fastcgi, cgi or proxy rule's
// `requestBuffering`): a PHP-FPM child, a CGI process or an upstream connection then waits for no
// client's upload, however slow.
//
//   bufferRequestBody(req, { tempDir, maxBytes }, done) -> cancel()
//     done(error, body) once the body has arrived whole; error.status: 400 (the client stopped
//     sending), 413 (more than maxBytes came: a body without Content-Length), 500 (the temporary
//     file could not be written)
//     body.length; body.open() -> a Readable of its bytes from the first (again for each try on
//     another upstream: an earlier one's is destroyed); body.dispose() frees it
//   cancel(): stop reading and free what was kept (the client went away); nothing once done
//   readBodyFirst(req, { isOver, fail, next, maxBytes }) -> cancel(): the stages' use of it:
//     next(body) once the body is whole, fail(status, reason) if it cannot be; a body that comes
//     once the request is over (isOver(): the client went, the time limit passed) is freed at once
//
// A body of up to BODY_MEMORY_BYTES stays in memory while the worker's bodies held so come to
// WORKER_MEMORY_BYTES at most (form posts, most uploads): writing a 1 MiB body to a file and reading
// it back doubled the worker's CPU for the request. A larger body, or one that would take the
// worker past its bound, goes to a file of its own in tempDir (os.tmpdir() unless given), created
// with O_EXCL and mode 0600 and unlinked at once: only the open descriptor holds it, so no file is
// left behind, whatever ends the worker.
//
//   bytesInMemory() -> the bytes of bodies this worker holds in memory now
//   declaredOver(req, maxBytes) -> whether the request's Content-Length is over maxBytes
//   refuseBody(req, res, sendError): the 413 for a body over a rule's maxBodySize, the connection
//     closed after it: the client is told to stop rather than made to send what would be dropped
//     (a response already started is cut instead)

const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const crypto = require('node:crypto');
const { Readable } = require('node:stream');

const BODY_MEMORY_BYTES = 1024 * 1024;
const WORKER_MEMORY_BYTES = 32 * 1024 * 1024;
const READ_BYTES = 64 * 1024;
const WRITE_BYTES = 64 * 1024; // waiting for the file before the client is paused

let inMemory = 0; // this worker's, all bodies together

function bytesInMemory() {
  return inMemory;
}

class BodyError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function openUnlinkedFile(tempDir) {
  const filename = path.join(tempDir, `svr-body-${crypto.randomBytes(12).toString('hex')}`);
  const handle = await fs.promises.open(filename, 'wx+', 0o600);
  try {
    await fs.promises.unlink(filename);
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
  return handle;
}

async function writeWhole(handle, bytes) {
  let at = 0;
  while (at < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, at, bytes.length - at);
    at += bytesWritten;
  }
}

class BufferedBody {
  constructor(chunks, handle, length) {
    this.length = length;
    this.chunks = chunks;
    this.handle = handle;
    this.reader = null;
  }

  open() {
    if (this.handle === null) return Readable.from(this.chunks);
    if (this.reader !== null) this.reader.destroy();
    this.reader = readFromStart(this.handle, this.length);
    this.reader.on('error', () => {}); // the gateway learns of it from 'close' without 'end'
    return this.reader;
  }

  dispose() {
    if (this.handle === null && this.chunks.length > 0) inMemory -= this.length;
    this.chunks = [];
    if (this.reader !== null) this.reader.destroy();
    if (this.handle !== null) this.handle.close().catch(() => {});
    this.handle = null;
    this.reader = null;
  }
}

// The file's bytes from the first, read at positions: each try on another upstream gets a stream of
// its own, and destroying one leaves the handle open (a file stream would close it). The handle is
// the body's: dispose() closes it, and a FileHandle closes only once no read is in flight (a
// descriptor closed under a pending read could be reused by another file).
function readFromStart(handle, length) {
  let position = 0;
  return new Readable({
    highWaterMark: READ_BYTES,
    read() {
      if (position >= length) return this.push(null);
      const size = Math.min(READ_BYTES, length - position);
      const buffer = Buffer.allocUnsafe(size);
      handle.read(buffer, 0, size, position).then(({ bytesRead }) => {
        if (this.destroyed) return;
        if (bytesRead === 0) return this.destroy(new Error('the request body file ended early'));
        position += bytesRead;
        this.push(bytesRead === size ? buffer : buffer.subarray(0, bytesRead));
      }, (error) => this.destroy(error));
      return undefined;
    },
  });
}

function bufferRequestBody(req, { tempDir, maxBytes = Infinity } = {}, done) {
  let kept = []; // in memory, or waiting for the file
  let keptBytes = 0;
  let length = 0;
  let tail = null; // the file operations, in order, once the body outgrew memory
  let handle = null; // the file they write
  let writeQueued = false;
  let settled = false;

  // done() runs outside the promise chain, so that what it throws is not taken for a file error.
  function answer(error, body) {
    queueMicrotask(() => done(error, body));
  }

  function stopReading() {
    settled = true;
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    req.removeListener('error', onError);
  }

  // The file is closed once the operations in flight are over, unless a body took it.
  function releaseFile() {
    if (tail === null) inMemory -= keptBytes;
    kept = [];
    keptBytes = 0;
    const close = () => {
      if (handle !== null) handle.close().catch(() => {});
      handle = null;
    };
    if (tail === null) close();
    else tail.then(close, close);
  }

  function fail(error) {
    if (settled) return;
    stopReading();
    releaseFile();
    answer(error);
  }

  function queue(operation) {
    tail = (tail || Promise.resolve()).then(() => (settled ? undefined : operation()));
    tail.catch((error) => fail(new BodyError(500, `the request body could not be kept in a temporary file: ${error.code || error.message}`)));
  }

  // What arrived while the last write was in flight goes out in one write; the client is paused
  // only while WRITE_BYTES wait.
  async function writeKept() {
    writeQueued = false;
    if (handle === null) handle = await openUnlinkedFile(tempDir ?? os.tmpdir());
    const bytes = kept.length === 1 ? kept[0] : Buffer.concat(kept);
    kept = [];
    keptBytes = 0;
    await writeWhole(handle, bytes);
    if (!settled) req.resume();
  }

  function onData(chunk) {
    length += chunk.length;
    if (length > maxBytes) return fail(new BodyError(413, `the request body is over ${maxBytes} bytes`));
    kept.push(chunk);
    keptBytes += chunk.length;
    if (tail === null) {
      if (length <= BODY_MEMORY_BYTES && inMemory + chunk.length <= WORKER_MEMORY_BYTES) {
        inMemory += chunk.length;
        return;
      }
      inMemory -= keptBytes - chunk.length; // what memory held of it goes to the file
    }
    if (keptBytes >= WRITE_BYTES) req.pause();
    if (!writeQueued) {
      writeQueued = true;
      queue(writeKept);
    }
  }

  function onEnd() {
    if (tail === null) {
      stopReading();
      return answer(null, new BufferedBody(kept, null, length)); // its bytes stay counted until dispose()
    }
    queue(() => {
      const file = handle;
      handle = null; // the body owns it now
      stopReading();
      answer(null, new BufferedBody([], file, length));
    });
  }

  function onError() {
    fail(new BodyError(400, 'the request body broke off'));
  }

  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  return function cancel() {
    if (settled) return;
    stopReading();
    releaseFile();
  };
}

function declaredOver(req, maxBytes) {
  return Number(req.headers['content-length']) > maxBytes;
}

function refuseBody(req, res, sendError) {
  if (res.headersSent) return res.destroy();
  if (req.httpVersionMajor === 1) res.setHeader('Connection', 'close');
  return sendError(req, res, 413);
}

function readBodyFirst(req, { isOver, fail, next, maxBytes }) {
  return bufferRequestBody(req, { maxBytes }, (error, body) => {
    if (isOver()) return body && body.dispose();
    if (error) return fail(error.status, error.message);
    return next(body);
  });
}

module.exports = { bufferRequestBody, readBodyFirst, declaredOver, refuseBody, bytesInMemory, BODY_MEMORY_BYTES, WORKER_MEMORY_BYTES };
