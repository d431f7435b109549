'use strict';
// What the HTTP/1 parser itself refuses, answered with the status RFC 9112 and nginx give rather
// than Node's blanket 400. Requests the parser accepts are
// checked by the pipeline's first stage (lib/pipeline/strict-head.js).
//
//   answerParserErrors(server): maxHeadersCount 0 (every header line reaches the request, so the pipeline
//   can count the head's bytes as on the wire), and a clientError listener:
//     HPE_INVALID_VERSION (HTTP/1.2, HTTP/3.0 ...)             505
//       but a request line not ended by CRLF (bare LF, a space
//       after the version), which the parser reports the same  400
//     HPE_INVALID_TRANSFER_ENCODING (chunked not last ...)     501
//     HPE_HEADER_OVERFLOW                                      431
//     HPE_CHUNK_EXTENSIONS_OVERFLOW                            413
//     ERR_HTTP_REQUEST_TIMEOUT                                 408
//     anything else                                            400
//   always with Connection: close, and the connection closed once the answer is written.

const { STATUS_CODES } = require('node:http');

const STATUS_BY_CODE = {
  HPE_INVALID_VERSION: 505,
  HPE_INVALID_TRANSFER_ENCODING: 501,
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

// Built once per status: these answers carry nothing from the request.
const answers = new Map();
function answerFor(status) {
  let answer = answers.get(status);
  if (answer === undefined) {
    const body = `${status} ${STATUS_CODES[status]}\n`;
    answer = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    answers.set(status, answer);
  }
  return answer;
}

// The parser's reason for a request line whose version is followed by anything but CRLF: a
// malformed request (RFC 9112 §2.2: 400), not a version svr does not support.
const NOT_CRLF_AFTER_VERSION = 'Expected CRLF after version';

function statusFor(err) {
  if (err.code === 'HPE_INVALID_VERSION' && err.reason === NOT_CRLF_AFTER_VERSION) return 400;
  return STATUS_BY_CODE[err.code] || 400;
}

function onClientError(err, socket) {
  const started = socket._httpMessage && socket._httpMessage.headersSent;
  if (err.code === 'ECONNRESET' || !socket.writable || started) {
    socket.destroy();
    return;
  }
  socket.end(answerFor(statusFor(err)), () => socket.destroy());
}

function answerParserErrors(server) {
  server.maxHeadersCount = 0;
  server.on('clientError', onClientError);
}

module.exports = { answerParserErrors };
