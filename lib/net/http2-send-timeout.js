'use strict';
// sendTimeout for HTTP/2: a stream whose output waits and has not moved for the timeout is reset
// (RST_STREAM CANCEL) and destroyed, which ends its body: the file it reads is closed, its
// compression slot and buffers given back. A client that opens a window of 0 and never sends
// WINDOW_UPDATE otherwise held every stream it opened, a descriptor each, for ever, and its
// session with them (the idle GOAWAY waits for the last stream). A stream with nothing waiting (a
// long poll, an event stream between events, a response waiting on its upstream) is never cut.
//
// What "moved" is, per stream: Node tells a stream's writer a write is done once all of it has gone
// to the socket, and says nothing of the part of a write in flight (nor, per stream, of the flow
// control window). So each stream counts its writes, and its writes are kept small: one larger
// than PIECE_BYTES is handed to Node a piece at a time, the next when the one before is out, and so
// is a batch of buffered writes Node would hand over together. A write that starts means the one
// before went out; a stream that has output waiting (bufferSize) and started none since the last
// sweep has not moved. Static bodies are already written in 16 KiB slices (static/http2-body.js);
// a script's res.end(tenMegabytes) to a slow client moves a piece at a time, and is not cut as long
// as the client takes PIECE_BYTES per timeout.
//
// The connection too: one whose bytes wait in the accepted socket's write queue (the client reads
// nothing at all) and have not moved for the timeout, or one closing with no stream left that has
// not closed within it, is reset. Node never lets go of the descriptor of a closing session whose
// socket has bytes it cannot write, not even once the client is gone (Node 20).
//
// Cost: per stream, six properties set once (_write, _writev, three counters, its session's set)
// and a Set entry; per write, a counter and a length test (a large write: one callback per piece).
// No timer per stream or session: one sweep per listener every sweepEveryMs (a tenth of the
// timeout, between 50 ms and a second), over the open sessions and their open streams.
//
//   watchSends(sessions, timeoutMs) -> { session(session), stream(session, stream),
//                                         streamClosed(stream), sweep(now) }
//     sessions: the listener's open sessions (a Set); session() and stream() as each opens,
//     streamClosed() as a stream closes; sweep() resets what has not moved for timeoutMs

const { acceptedSocket } = require('./accepted-socket');
const { closeNow } = require('./silent-connections');

const PIECE_BYTES = 64 * 1024;
const NGHTTP2_CANCEL = 0x8; // RFC 9113 §7: "the stream is no longer needed"

const kSend = Symbol('svr.h2Send'); // a session's { socket, streams, seen, stillSince }; a stream's Set
const kWrites = Symbol('svr.h2Writes'); // writes started
const kSeen = Symbol('svr.h2WritesSeen'); // kWrites at the last sweep
const kStillSince = Symbol('svr.h2StillSince'); // since when its waiting output has not moved

let streamWrite = null; // Node's Http2Stream _write and _writev, taken from the first stream
let streamWritev = null;

function paceWrites(stream) {
  if (streamWrite === null && typeof stream._write === 'function') {
    streamWrite = stream._write;
    streamWritev = stream._writev;
  }
  stream[kWrites] = 0;
  stream[kSeen] = -1; // the first sweep starts its clock, whatever it finds
  stream[kStillSince] = 0;
  stream._write = pacedWrite;
  stream._writev = pacedWritev;
}

// this: the stream. Writable calls it with one chunk, and again only once the callback ran.
function pacedWrite(chunk, encoding, cb) {
  this[kWrites]++;
  if (chunk.length <= PIECE_BYTES / 4) return streamWrite.call(this, chunk, encoding, cb); // a string: at most 3 bytes a character
  const buffer = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk;
  if (buffer.length <= PIECE_BYTES) return streamWrite.call(this, buffer, 'buffer', cb);
  return writePieces(this, [{ chunk: buffer, encoding: 'buffer' }], cb);
}

// this: the stream. entries: [{ chunk, encoding }] that Writable buffered meanwhile.
function pacedWritev(entries, cb) {
  this[kWrites]++;
  let bytes = 0;
  for (let i = 0; i < entries.length && bytes <= PIECE_BYTES; i++) bytes += entries[i].chunk.length;
  if (bytes <= (entries.allBuffers ? PIECE_BYTES : PIECE_BYTES / 4)) return streamWritev.call(this, entries, cb);
  return writePieces(this, entries, cb);
}

// The entries' bytes, PIECE_BYTES at most per write to Node, one write at a time; cb once all are
// out (or with the first error). A stream destroyed meanwhile drops the write, as Node's own does.
function writePieces(stream, entries, cb) {
  const pieces = inPieces(entries);
  let next = 0;
  const writeNext = (err) => {
    if (err || next === pieces.length) return cb(err);
    const piece = pieces[next++];
    if (next > 1) stream[kWrites]++;
    return piece.length === 1 ? streamWrite.call(stream, piece[0].chunk, piece[0].encoding, writeNext) : streamWritev.call(stream, piece, writeNext);
  };
  return writeNext();
}

// entries regrouped into pieces of at most PIECE_BYTES (a large chunk cut into several), each an
// array of { chunk, encoding }.
function inPieces(entries) {
  const pieces = [];
  let piece = [];
  let bytes = 0;
  const flush = () => { if (piece.length > 0) pieces.push(piece); piece = []; bytes = 0; };
  for (const entry of entries) {
    const buffer = typeof entry.chunk === 'string' ? Buffer.from(entry.chunk, entry.encoding) : entry.chunk;
    for (let offset = 0; offset < buffer.length;) {
      if (bytes === PIECE_BYTES) flush();
      const part = buffer.subarray(offset, offset + PIECE_BYTES - bytes);
      piece.push({ chunk: part, encoding: 'buffer' });
      bytes += part.length;
      offset += part.length;
    }
  }
  flush();
  for (const each of pieces) each.allBuffers = true; // what Writable's own batches say of themselves
  return pieces;
}

function watchSends(sessions, timeoutMs) {
  return {
    session(session) {
      session[kSend] = { socket: acceptedSocket(session.socket), streams: new Set(), seen: 0, stillSince: 0 };
    },
    stream(session, stream) {
      paceWrites(stream);
      session[kSend].streams.add(stream);
      stream[kSend] = session[kSend].streams;
    },
    streamClosed(stream) { // from the 'close' listener the streams already have (http2-sessions.js)
      stream[kSend].delete(stream);
    },
    sweep(now) {
      for (const session of sessions) {
        const send = session[kSend];
        if (send === undefined) continue;
        if (sessionStuck(session, send, now, timeoutMs)) { closeNow(send.socket); continue; }
        for (const stream of send.streams) if (streamStuck(stream, now, timeoutMs)) cancel(stream);
      }
    },
  };
}

// Output waiting that has not moved since the last sweep: for timeoutMs, true.
function streamStuck(stream, now, timeoutMs) {
  if (!(stream.bufferSize > 0) || stream[kWrites] !== stream[kSeen]) {
    stream[kSeen] = stream[kWrites];
    stream[kStillSince] = now;
    return false;
  }
  return now - stream[kStillSince] >= timeoutMs;
}

// The session's bytes wait in its socket's write queue (or it closes, with no stream left) and
// the socket has written none since the last sweep: for timeoutMs, true.
function sessionStuck(session, send, now, timeoutMs) {
  const socket = send.socket;
  if (socket === null || socket.destroyed) return false;
  const written = socket.bytesWritten;
  const closing = (session.closed || session.destroyed) && send.streams.size === 0;
  const queued = socket._handle ? socket._handle.writeQueueSize > 0 : false; // net.Socket reads it so, for its own timeout
  if (!(queued || closing) || written !== send.seen) {
    send.seen = written;
    send.stillSince = now;
    return false;
  }
  return now - send.stillSince >= timeoutMs;
}

// RST_STREAM goes out whatever the window (it is not flow-controlled); destroy() frees the stream at
// once rather than when that frame is sent, which a client that reads nothing may never allow.
function cancel(stream) {
  stream.close(NGHTTP2_CANCEL);
  stream.destroy();
}

module.exports = { watchSends, PIECE_BYTES };
