'use strict';
// The FastCGI record layer (FastCGI 1.0 specification): encoding the records svr sends and a
// streaming parser for the ones the application sends back.
//
//   beginRequest(id, keepConn)      -> Buffer   FCGI_BEGIN_REQUEST, role RESPONDER
//   paramsRecords(id, pairs)        -> Buffer[] FCGI_PARAMS carrying the name-value pairs, then
//                                              the empty FCGI_PARAMS that ends them
//   streamRecords(type, id, chunk)  -> Buffer[] one FCGI_STDIN record per 65535 bytes of chunk
//                                              (an empty chunk: the record that ends the stream)
//   abortRequest(id)                -> Buffer   FCGI_ABORT_REQUEST
//   new RecordParser({ requestId, onData(type, id, bytes), onEnd(id, appStatus, protocolStatus), onError(err) })
//     parser.push(chunk): content of stream records (STDOUT, STDERR) is handed on as it arrives,
//     slices of the received chunk, never gathered into whole records; END_REQUEST is decoded.
//     A record for another request than requestId is an error (onError, and nothing more is
//     parsed); a management record (request id 0) is passed over.
//
// Records carry at most 65535 content bytes; svr sends no padding. svr sends one request per
// connection, always as REQUEST_ID (PHP-FPM does not multiplex requests on a connection).

const VERSION = 1;
const TYPE = {
  BEGIN_REQUEST: 1, ABORT_REQUEST: 2, END_REQUEST: 3, PARAMS: 4, STDIN: 5, STDOUT: 6, STDERR: 7,
  DATA: 8, GET_VALUES: 9, GET_VALUES_RESULT: 10, UNKNOWN_TYPE: 11,
};
const REQUEST_ID = 1;
const MANAGEMENT_ID = 0;
const ROLE_RESPONDER = 1;
const FLAG_KEEP_CONN = 1;
const MAX_CONTENT = 65535;
const HEADER_LENGTH = 8;
// protocolStatus of END_REQUEST
const PROTOCOL_STATUS = ['REQUEST_COMPLETE', 'CANT_MPX_CONN', 'OVERLOADED', 'UNKNOWN_ROLE'];

function header(type, id, contentLength) {
  const buf = Buffer.allocUnsafe(HEADER_LENGTH);
  buf[0] = VERSION;
  buf[1] = type;
  buf.writeUInt16BE(id, 2);
  buf.writeUInt16BE(contentLength, 4);
  buf[6] = 0; // padding length
  buf[7] = 0;
  return buf;
}

function beginRequest(id, keepConn) {
  const buf = Buffer.alloc(HEADER_LENGTH + 8);
  header(TYPE.BEGIN_REQUEST, id, 8).copy(buf);
  buf.writeUInt16BE(ROLE_RESPONDER, 8);
  buf[10] = keepConn ? FLAG_KEEP_CONN : 0;
  return buf;
}

function abortRequest(id) {
  return header(TYPE.ABORT_REQUEST, id, 0);
}

// A name or value length: one byte below 128, else four bytes with the high bit set.
function lengthBytes(n) {
  if (n < 128) return Buffer.from([n]);
  const buf = Buffer.allocUnsafe(4);
  buf.writeUInt32BE((n | 0x80000000) >>> 0, 0);
  return buf;
}

// pairs: [[name, value]] of strings -> the encoded name-value pairs.
function encodePairs(pairs) {
  const parts = [];
  for (const [name, value] of pairs) {
    const n = Buffer.from(name, 'utf8');
    const v = Buffer.from(value, 'utf8');
    parts.push(lengthBytes(n.length), lengthBytes(v.length), n, v);
  }
  return Buffer.concat(parts);
}

function streamRecords(type, id, chunk) {
  if (chunk.length === 0) return [header(type, id, 0)];
  const out = [];
  for (let at = 0; at < chunk.length; at += MAX_CONTENT) {
    const piece = chunk.subarray(at, Math.min(at + MAX_CONTENT, chunk.length));
    out.push(header(type, id, piece.length), piece);
  }
  return out;
}

function paramsRecords(id, pairs) {
  const body = encodePairs(pairs);
  return [...(body.length ? streamRecords(TYPE.PARAMS, id, body) : []), header(TYPE.PARAMS, id, 0)];
}

// The parser keeps at most one record header and one END_REQUEST body (8 bytes each) of its own.
class RecordParser {
  constructor({ requestId, onData, onEnd, onError }) {
    this.requestId = requestId;
    this.onData = onData;
    this.onEnd = onEnd;
    this.onError = onError;
    this.head = Buffer.alloc(HEADER_LENGTH);
    this.headFill = 0;
    this.type = 0;
    this.id = 0;
    this.contentLeft = 0;
    this.paddingLeft = 0;
    this.small = null; // the body of a non-stream record, gathered (at most 65535 bytes)
    this.smallFill = 0;
    this.failed = false;
  }

  push(chunk) {
    let at = 0;
    while (at < chunk.length && !this.failed) {
      if (this.contentLeft === 0 && this.paddingLeft === 0) {
        const take = Math.min(HEADER_LENGTH - this.headFill, chunk.length - at);
        chunk.copy(this.head, this.headFill, at, at + take);
        this.headFill += take;
        at += take;
        if (this.headFill === HEADER_LENGTH) this.startRecord();
        continue;
      }
      if (this.contentLeft > 0) {
        const take = Math.min(this.contentLeft, chunk.length - at);
        this.content(chunk.subarray(at, at + take));
        this.contentLeft -= take;
        at += take;
        if (this.contentLeft === 0 && this.paddingLeft === 0) this.endRecord();
        continue;
      }
      const skip = Math.min(this.paddingLeft, chunk.length - at);
      this.paddingLeft -= skip;
      at += skip;
      if (this.paddingLeft === 0) this.endRecord();
    }
  }

  startRecord() {
    this.headFill = 0;
    if (this.head[0] !== VERSION) {
      this.failed = true;
      this.onError(new Error(`not a FastCGI record (version byte ${this.head[0]})`));
      return;
    }
    this.type = this.head[1];
    this.id = this.head.readUInt16BE(2);
    if (this.id !== this.requestId && !isManagement(this.type, this.id)) {
      // Output of another request (a server that mixes up its requests) must not become this
      // request's response or log lines: the connection cannot be trusted any further.
      this.failed = true;
      this.onError(new Error(`a FastCGI record for request id ${this.id}, not ${this.requestId}`));
      return;
    }
    this.contentLeft = this.head.readUInt16BE(4);
    this.paddingLeft = this.head[6];
    this.small = isStream(this.type) ? null : Buffer.alloc(this.contentLeft);
    this.smallFill = 0;
    if (this.contentLeft === 0 && this.paddingLeft === 0) this.endRecord();
  }

  content(bytes) {
    if (this.small === null) {
      this.onData(this.type, this.id, bytes);
      return;
    }
    bytes.copy(this.small, this.smallFill);
    this.smallFill += bytes.length;
  }

  endRecord() {
    if (this.type === TYPE.END_REQUEST) {
      if (this.small.length < 5) {
        this.failed = true;
        this.onError(new Error('a short FCGI_END_REQUEST record'));
        return;
      }
      this.onEnd(this.id, this.small.readUInt32BE(0), this.small[4]);
    }
    // Other records end quietly: an empty STDOUT/STDERR ends that stream (END_REQUEST follows);
    // svr asks for no management records (a stray one says nothing about the request), and a
    // responder sends no others.
    this.small = null;
  }
}

// The records an application may send about the connection rather than a request: answers to
// the web server's FCGI_GET_VALUES and to a management record of a type it does not know.
function isManagement(type, id) {
  return id === MANAGEMENT_ID && (type === TYPE.GET_VALUES_RESULT || type === TYPE.UNKNOWN_TYPE);
}

function isStream(type) {
  return type === TYPE.STDOUT || type === TYPE.STDERR;
}

module.exports = {
  TYPE, PROTOCOL_STATUS, MAX_CONTENT, REQUEST_ID, beginRequest, abortRequest, paramsRecords, streamRecords, encodePairs, RecordParser,
};
