'use strict';
// WebSocket and other Upgrade requests over HTTP/1.1: the listener's 'upgrade' event hands us the
// request, its raw socket and the bytes already read past the headers. We send the request to an
// upstream with the same Upgrade header; if it answers 101, its status line and headers go back
// to the client as they came, and from then on the two sockets are piped to each other (bytes
// both ways, backpressure by pipe()); the end or error of either side ends the other.
// Any other answer is relayed as an ordinary response and the client's connection closed.
//
// HTTP/2 clients: WebSockets over HTTP/2 need extended CONNECT (RFC 8441), which svr does not
// offer (it never sends SETTINGS_ENABLE_CONNECT_PROTOCOL), so browsers open their WebSockets
// over HTTP/1.1 to an HTTP/2-enabled listener, which ALPN allows.

const http = require('node:http');
const net = require('node:net');
const { upstreamRequestHeaders, connectionTokens } = require('./forward-headers');
const { upstreamPath } = require('./rules');

function tunnel(req, socket, head, rule, ctx) {
  const upstream = rule.pool.pick(new Set());
  const { target } = upstream;
  const { timeouts } = rule;
  let upgraded = false;
  upstream.active++;
  const release = once(() => { upstream.active--; });
  socket.on('error', () => {});
  socket.once('close', release);

  const upReq = upstream.module.request({
    agent: false, // an upgraded connection is never returned to the pool
    method: req.method,
    hostname: target.hostname,
    port: target.port,
    socketPath: target.socketPath,
    path: upstreamPath(rule, target, req.url),
    headers: upstreamRequestHeaders(req, rule, target, { ...ctx, upgrade: req.headers.upgrade }),
    servername: target.protocol === 'https:' && !net.isIP(target.hostname) ? target.hostname : '',
    rejectUnauthorized: upstream.agent.options.rejectUnauthorized !== false,
    timeout: timeouts.connect,
  });
  upReq.on('timeout', () => upReq.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
  upReq.on('error', (error) => {
    if (upgraded) return;
    upstream.recordFailure(rule.pool.passive);
    ctx.log.warn(`proxy: upgrade ${req.url} -> ${upstream.label}: ${error.code || error.message}; answering 502`);
    rawError(socket, 502, 'Bad Gateway');
  });
  upReq.on('upgrade', (upRes, upSocket, upHead) => {
    upgraded = true;
    upstream.recordSuccess();
    socket.write(statusAndHeaders(upRes));
    if (upHead.length) socket.write(upHead);
    if (head.length) upSocket.write(head);
    join(socket, upSocket, timeouts.tunnelIdle);
  });
  upReq.on('response', (upRes) => relay(upRes, socket));
  socket.once('close', () => { if (!upgraded) upReq.destroy(); });
  upReq.end();
}

// Two sockets become one pipe; either side's end or error ends the other.
function join(client, upstream, idleMs) {
  upstream.setTimeout(0);
  client.setTimeout(idleMs, () => client.destroy());
  upstream.setTimeout(idleMs, () => upstream.destroy());
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
  upstream.once('close', () => client.destroy());
  client.once('close', () => upstream.destroy());
  client.pipe(upstream);
  upstream.pipe(client);
}

function statusAndHeaders(upRes) {
  let text = `HTTP/1.1 ${upRes.statusCode} ${upRes.statusMessage || http.STATUS_CODES[upRes.statusCode] || ''}\r\n`;
  const raw = upRes.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) text += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return `${text}\r\n`;
}

// A refusal to upgrade (a 401, a 404...) goes back as it came, then the connection closes.
function relay(upRes, socket) {
  const listed = connectionTokens(upRes.headers.connection);
  let text = `HTTP/1.1 ${upRes.statusCode} ${upRes.statusMessage || ''}\r\n`;
  const raw = upRes.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (name === 'connection' || name === 'keep-alive' || name === 'transfer-encoding' || (listed && listed.has(name))) continue;
    text += `${raw[i]}: ${raw[i + 1]}\r\n`;
  }
  socket.write(`${text}Connection: close\r\n\r\n`);
  upRes.pipe(socket);
}

function rawError(socket, status, reason) {
  if (socket.destroyed) return;
  const body = `${status} ${reason}\n`;
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
}

function once(fn) {
  let called = false;
  return () => { if (!called) { called = true; fn(); } };
}

module.exports = { tunnel, rawError };
