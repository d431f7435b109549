'use strict';
// Connections of one worker to one FastCGI server, kept alive between requests and bounded.
//
//   const pool = new ConnectionPool({ path } | { host, port }, { maxConnections, connectMs, keepAliveMs })
//   const cancel = pool.acquire((error, connection) => ...)   an idle connection (the most recently
//                  used first, so the others time out), a new one while fewer than maxConnections
//                  are open, or else the first one released; cancel() leaves the queue
//   pool.release(connection)  after a complete request on a connection the server keeps open
//   pool.discard(connection)  anything else: the socket is destroyed, its place freed
//   pool.close()              every idle connection closed, waiting requests refused
//   pool.counts() -> { open, idle, waiting }
//
// connection: { socket, reused, onRecord: null | { data(type, bytes), end(appStatus, protocolStatus),
// error(err), timeout() } }: the request owning it sets onRecord. An idle connection that the server closes,
// that sends anything, or that stays idle keepAliveMs is dropped (0: none is kept).
//
// Why keepAliveMs is short: PHP-FPM serves a connection with one child until the connection
// closes, idle or not. Idle connections kept long by one worker would hold children that another
// worker's requests wait for; under load a connection is reused within milliseconds anyway.

const net = require('node:net');
const { RecordParser, REQUEST_ID } = require('./records');

class ConnectionPool {
  constructor(address, { maxConnections, connectMs, keepAliveMs }) {
    this.address = address;
    this.maxConnections = maxConnections;
    this.connectMs = connectMs;
    this.keepAliveMs = keepAliveMs;
    this.idle = [];
    this.waiting = [];
    this.open = 0;
    this.closed = false;
  }

  counts() {
    return { open: this.open, idle: this.idle.length, waiting: this.waiting.length };
  }

  acquire(callback) {
    if (this.closed) {
      process.nextTick(callback, new Error('the gateway is closed'));
      return () => {};
    }
    const connection = this.idle.pop();
    if (connection) {
      connection.socket.setTimeout(0);
      connection.socket.ref();
      connection.reused = true;
      process.nextTick(callback, null, connection);
      return () => {};
    }
    if (this.open < this.maxConnections) {
      this.connect(callback);
      return () => {};
    }
    const waiter = { callback };
    this.waiting.push(waiter);
    return () => {
      const at = this.waiting.indexOf(waiter);
      if (at !== -1) this.waiting.splice(at, 1);
    };
  }

  connect(callback) {
    this.open++;
    const socket = net.connect(this.address);
    const connection = { socket, reused: false, onRecord: null, gone: false };
    const parser = new RecordParser({
      requestId: REQUEST_ID,
      onData: (type, id, bytes) => (connection.onRecord ? connection.onRecord.data(type, bytes) : socket.destroy()),
      onEnd: (id, appStatus, protocolStatus) => (connection.onRecord ? connection.onRecord.end(appStatus, protocolStatus) : socket.destroy()),
      onError: (error) => socket.destroy(error),
    });
    let connected = false;
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error(`no connection within ${this.connectMs} ms`), { code: 'ETIMEDOUT' })), this.connectMs);
    socket.setNoDelay(true);
    socket.on('data', (chunk) => parser.push(chunk));
    // One listener for the socket's life: silence during a request is the request's to answer,
    // an idle pooled connection is closed.
    socket.on('timeout', () => (connection.onRecord ? connection.onRecord.timeout() : socket.destroy()));
    socket.once('connect', () => {
      connected = true;
      clearTimeout(timer);
      callback(null, connection);
    });
    socket.on('error', (error) => {
      if (!connected) {
        clearTimeout(timer);
        return callback(error);
      }
      if (connection.onRecord) connection.onRecord.error(error);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      this.forget(connection);
      if (connected && connection.onRecord) connection.onRecord.error(Object.assign(new Error('the FastCGI server closed the connection'), { code: 'ECONNRESET' }));
    });
  }

  // A socket is gone: its place goes to the next waiting request.
  forget(connection) {
    if (connection.gone) return;
    connection.gone = true;
    this.open--;
    const at = this.idle.indexOf(connection);
    if (at !== -1) this.idle.splice(at, 1);
    const waiter = this.waiting.shift();
    if (waiter) this.connect(waiter.callback);
  }

  release(connection) {
    connection.onRecord = null;
    if (connection.gone) return;
    const waiter = this.waiting.shift();
    if (waiter) {
      connection.reused = true;
      return process.nextTick(waiter.callback, null, connection);
    }
    if (this.closed || this.keepAliveMs === 0) return this.discard(connection);
    connection.socket.setTimeout(this.keepAliveMs);
    connection.socket.unref(); // an idle connection never keeps a draining worker alive
    this.idle.push(connection);
  }

  discard(connection) {
    connection.onRecord = null;
    connection.socket.destroy();
    this.forget(connection);
  }

  close() {
    this.closed = true;
    for (const connection of [...this.idle]) this.discard(connection);
    for (const waiter of this.waiting.splice(0)) process.nextTick(waiter.callback, new Error('the gateway is closed'));
  }
}

module.exports = { ConnectionPool };
