'use strict';
// One request through a FastCGI server (role RESPONDER), streamed both ways.
//
//   fastcgiRequest(req, res, { pool, params, timeouts, response, log, label, bufferBody })
//     params: [[name, value]] (environment.js); response: a CgiResponse (../cgi-response.js),
//     whose fail(status, reason) answers when the request cannot go on.
//
// - bufferBody (a rule's requestBuffering): the request body is read whole (../../upstream/request-body.js)
//   before a connection is taken, so a PHP-FPM child never waits for a slow upload. Without it
//   the body goes out as FCGI_STDIN records as it arrives.
// - Either way, while the socket's buffer is full the body's source is paused, so a large upload
//   holds a socket buffer, not the upload.
// - FCGI_STDOUT goes into the CgiResponse as it arrives; while the client's buffer is full the
//   upstream socket is paused (and PHP-FPM blocks in its write), so a large response holds a
//   socket buffer, not the response.
// - FCGI_STDERR lines go to the error log (at most MAX_STDERR_BYTES per request).
// - Timeouts: the pool's connect (502); firstByte from the request's arrival to the first output
//   byte, reading the body (bufferBody) and waiting for a connection included (504); idle, silence on the socket during the request
//   (504 before the output started, else the client's response is cut), not counted while svr
//   stops reading for a slow client.
// - A kept-alive connection the server closed just as the request was sent is replaced by a new
//   one once, when the request has no body (nothing of it was consumed).
// - A client that goes away: the connection is destroyed (PHP-FPM ends the script's request).

const { TYPE, PROTOCOL_STATUS, REQUEST_ID, beginRequest, paramsRecords, streamRecords } = require('./records');
const { requestHasBody } = require('../../upstream');
const { StderrLines } = require('../stderr-lines');
const { readBodyFirst } = require('../../upstream/request-body');

const MAX_STDERR_BYTES = 65536;
// A kept-alive connection the server closed as the request went out; any other error (a record
// it should not have sent) came from a server that took the request.
const CLOSED_CODES = new Set(['ECONNRESET', 'EPIPE']);

function fastcgiRequest(req, res, { pool, params, timeouts, response, log, label, bufferBody = false }) {
  const hasBody = requestHasBody(req);
  let connection = null;
  let cancelWait = null;
  let cancelBuffering = null;
  let buffered = null; // the body read whole (bufferBody)
  let source = req; // where the body's bytes come from
  let finished = false;
  let bodySent = !hasBody;
  let output = false; // a byte of FCGI_STDOUT arrived
  let retried = false;
  const stderr = new StderrLines((line) => log.error(`fastcgi ${label}: ${req.url}: ${line}`), MAX_STDERR_BYTES);

  const firstByteTimer = setTimeout(() => stop(504, `no output within ${timeouts.firstByte} ms`), timeouts.firstByte);

  function stop(status, reason) {
    if (finished) return;
    finish(false);
    if (response.headersSent) {
      log.warn(`fastcgi ${label}: ${req.method} ${req.url}: ${reason}; response cut`);
      res.destroy();
    } else {
      response.fail(status, reason); // logs the reason with the status
    }
  }

  function onClientClose() {
    if (!finished) finish(false); // the client went away: the script's request ends with the socket
  }

  // keep: the connection is left as the server expects the next request.
  function finish(keep) {
    finished = true;
    res.removeListener('close', onClientClose);
    clearTimeout(firstByteTimer);
    if (cancelWait) cancelWait();
    if (cancelBuffering) cancelBuffering();
    if (buffered !== null) buffered.dispose();
    stderr.flush();
    if (connection === null) return;
    const c = connection;
    connection = null;
    c.socket.setTimeout(0);
    c.socket.removeListener('drain', onSocketDrain);
    if (keep) c.socket.resume(); // paused for a slow client as the last records came in
    if (keep) pool.release(c);
    else pool.discard(c);
  }

  const records = {
    data(type, bytes) {
      if (finished) return;
      if (type === TYPE.STDERR) return stderr.push(bytes);
      if (type !== TYPE.STDOUT) return;
      if (!output) {
        output = true;
        clearTimeout(firstByteTimer);
      }
      const more = response.push(bytes);
      if (response.done) return finish(false); // abandoned (a bad header block, a body over its length)
      if (more === false && connection !== null) {
        // The client is slow, not the server: no idle limit while svr itself stops reading.
        const paused = connection;
        const socket = paused.socket;
        socket.pause();
        socket.setTimeout(0);
        res.once('drain', () => {
          if (finished || connection !== paused) return;
          socket.setTimeout(timeouts.idle);
          socket.resume();
        });
      }
    },
    end(appStatus, protocolStatus) {
      if (finished) return;
      if (protocolStatus !== 0) return stop(503, `the FastCGI server refused the request (${PROTOCOL_STATUS[protocolStatus] || protocolStatus})`);
      // A server that answered before reading the whole body cannot take the next request.
      finish(bodySent && pool.keepAliveMs > 0);
      if (!bodySent && source === req) req.resume(); // the rest of the body is read and dropped
      response.end();
    },
    timeout() {
      stop(504, `idle for ${timeouts.idle} ms`);
    },
    error(error) {
      if (finished) return;
      if (!output && !retried && !hasBody && connection && connection.reused && CLOSED_CODES.has(error.code)) {
        retried = true; // the server closed a kept-alive connection as the request went out
        const c = connection;
        connection = null;
        pool.discard(c);
        return acquire();
      }
      stop(502, error.code || error.message);
    },
  };

  function onSocketDrain() {
    source.resume();
  }

  function send(c) {
    connection = c;
    c.onRecord = records;
    c.socket.setTimeout(timeouts.idle);
    c.socket.on('drain', onSocketDrain);
    c.socket.cork();
    c.socket.write(beginRequest(REQUEST_ID, pool.keepAliveMs > 0));
    for (const record of paramsRecords(REQUEST_ID, params)) c.socket.write(record);
    if (!hasBody) writeStdin(Buffer.alloc(0));
    c.socket.uncork();
    if (hasBody && !retried) streamBody();
  }

  function writeStdin(chunk) {
    let ok = true;
    for (const record of streamRecords(TYPE.STDIN, REQUEST_ID, chunk)) ok = connection.socket.write(record) && ok;
    return ok;
  }

  function streamBody() {
    if (buffered !== null) source = buffered.open();
    source.on('data', (chunk) => {
      if (finished || connection === null) return;
      if (chunk.length && !writeStdin(chunk)) source.pause();
    });
    source.on('end', () => {
      if (finished || connection === null) return;
      writeStdin(Buffer.alloc(0));
      bodySent = true;
    });
    if (source === req) source.on('error', () => stop(400, 'the request body broke off'));
    else source.on('close', () => { if (!bodySent) stop(500, 'the buffered request body could not be read'); });
  }

  function acquire() {
    cancelWait = pool.acquire((error, c) => {
      cancelWait = null;
      if (finished) return c ? pool.release(c) : undefined;
      if (error) return stop(502, error.code || error.message);
      send(c);
    });
  }

  res.once('close', onClientClose);
  if (hasBody && bufferBody) {
    cancelBuffering = readBodyFirst(req, { isOver: () => finished, fail: stop, next: (body) => { buffered = body; acquire(); } });
  } else {
    acquire();
  }
}

module.exports = { fastcgiRequest };
