'use strict';
// HTTP/0.9 requests ("GET /" and a line end, no version) get a 400 at once, and the connection
// is closed. Node's HTTP/1 parser takes such a line for the start of a request line and waits for
// the version, which never comes: the client heard nothing until the silent-connection reset.
//
//   answerHttp09(server): on a plain http.Server, before any other 'connection' listener has
//   been added. The parser is attached once the connection's first line is complete (or
//   FIRST_LINE_MAX_BYTES arrived without one: the parser then answers 414/431/400 itself), and
//   those bytes handed to it; the server's other 'connection' listeners (tracking,
//   the silent-connection timer, the connection limit) still run at the accept.

const FIRST_LINE_MAX_BYTES = 16 * 1024;
const LF = 10;
// A method, one space, a target and the line end: no " HTTP/x.y".
const HTTP09_LINE = /^[A-Za-z]+ [^ \r\n]+\r?$/;
const BARE_400 = 'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 16\r\nConnection: close\r\n\r\n400 Bad Request\n';

function answerHttp09(server) {
  const [attachParser] = server.listeners('connection');
  server.removeListener('connection', attachParser);
  server.prependListener('connection', (socket) => {
    let buffered = null;
    const onData = (chunk) => {
      buffered = buffered === null ? chunk : Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf(LF);
      if (end === -1 && buffered.length < FIRST_LINE_MAX_BYTES) return; // the line is not complete
      socket.off('data', onData);
      if (end !== -1 && HTTP09_LINE.test(buffered.toString('latin1', 0, end))) {
        socket.pause();
        socket.end(BARE_400);
        return;
      }
      // The parser's own 'data' listener takes the bytes read so far, now: handing them back
      // with unshift() and a pause and resume cost every connection a turn of the stream's
      // machinery. Later bytes go to the parser straight from the socket, as Node sets it up.
      attachParser.call(server, socket);
      socket.emit('data', buffered);
    };
    socket.on('data', onData);
    socket.on('error', ignoreError); // a reset before the first line: nothing to answer
  });
}

function ignoreError() {}

module.exports = { answerHttp09, FIRST_LINE_MAX_BYTES };
