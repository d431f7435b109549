'use strict';
// A FastCGI server for tests that need one that misbehaves (silent, dead, slow) or that must
// report exactly what it was asked (the script it was told to run). Its record handling is written
// here again, independently of lib/pipeline/gateway/fastcgi/records.js, so that a mistake there
// cannot hide in both ends.
//
//   const fcgi = await startFakeFastcgi(dir, onRequest, { serial, onStdin })
//   onRequest({ params, body, id, write(bytes), stderr(text), end(), record(type, id, content), socket }):
//   called once the body (FCGI_STDIN) is complete; write() sends FCGI_STDOUT (returns socket.write's
//   verdict), end() sends the empty STDOUT and FCGI_END_REQUEST, all with the request's id. Leave
//   them uncalled for a server that never answers. record() sends one record as given (another
//   request's id, a management record).
//   fcgi.upstream ('unix:...'), fcgi.requests ([params]), fcgi.open() (connections open now),
//   fcgi.accepted() (connections ever), fcgi.stop()
//   onStdin(bytes): each FCGI_STDIN record's length as it arrives (the body streaming in);
//   serial: serve one connection at a time, as a PHP-FPM with one child does: a connection waits,
//   unread, until the one before it is closed (kept-alive idle connections included).

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

function record(type, id, content = Buffer.alloc(0)) {
  const head = Buffer.alloc(8);
  head[0] = 1;
  head[1] = type;
  head.writeUInt16BE(id, 2);
  head.writeUInt16BE(content.length, 4);
  return Buffer.concat([head, content]);
}

function decodePairs(buf) {
  const pairs = {};
  let at = 0;
  const length = () => {
    if (buf[at] < 128) return buf[at++];
    const n = buf.readUInt32BE(at) & 0x7fffffff;
    at += 4;
    return n;
  };
  while (at < buf.length) {
    const n = length();
    const v = length();
    const name = buf.toString('utf8', at, at + n);
    at += n;
    pairs[name] = buf.toString('utf8', at, at + v);
    at += v;
  }
  return pairs;
}

async function startFakeFastcgi(dir, onRequest, { serial = false, onStdin = null } = {}) {
  const socketPath = path.join(dir, `fake-fcgi-${process.pid}-${Math.random().toString(36).slice(2)}.sock`);
  const sockets = new Set();
  const requests = [];
  let accepted = 0;
  const queue = [];
  let serving = null;
  const serveNext = () => {
    serving = queue.shift() || null;
    if (serving) serving.resume();
  };
  const server = net.createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    if (serial) {
      socket.pause();
      queue.push(socket);
      socket.on('close', () => {
        const at = queue.indexOf(socket);
        if (at !== -1) queue.splice(at, 1);
        if (serving === socket) serveNext();
      });
      if (serving === null) serveNext();
    }
    socket.on('error', () => {});
    let buffered = Buffer.alloc(0);
    let params = [];
    let body = [];
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 8) {
        const type = buffered[1];
        const id = buffered.readUInt16BE(2);
        const length = buffered.readUInt16BE(4);
        const padding = buffered[6];
        if (buffered.length < 8 + length + padding) break;
        const content = buffered.subarray(8, 8 + length);
        buffered = buffered.subarray(8 + length + padding);
        if (type === 1) { params = []; body = []; }
        if (type === 4) params.push(Buffer.from(content));
        if (type === 5 && length > 0) {
          body.push(Buffer.from(content));
          if (onStdin) onStdin(length);
        }
        if (type === 5 && length === 0) {
          const decoded = decodePairs(Buffer.concat(params));
          requests.push(decoded);
          onRequest({
            params: decoded,
            body: Buffer.concat(body),
            id,
            socket,
            record: (recordType, recordId, content = '') => socket.write(record(recordType, recordId, Buffer.from(content))),
            write: (bytes) => {
              const data = Buffer.from(bytes);
              let ok = true;
              for (let at = 0; at < data.length; at += 65535) ok = socket.write(record(6, id, data.subarray(at, at + 65535))) && ok;
              return ok;
            },
            stderr: (text) => socket.write(record(7, id, Buffer.from(text))),
            end: () => socket.write(Buffer.concat([record(6, id), record(3, id, Buffer.alloc(8))])),
          });
        }
      }
    });
  });
  await new Promise((resolve) => server.listen(socketPath, resolve));
  return {
    upstream: `unix:${socketPath}`,
    socketPath,
    requests,
    open: () => sockets.size,
    accepted: () => accepted,
    stop: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => {
        fs.rmSync(socketPath, { force: true });
        resolve();
      });
    }),
  };
}

module.exports = { startFakeFastcgi, decodePairs };
