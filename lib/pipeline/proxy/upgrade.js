'use strict';
// WebSocket and other Upgrade requests over HTTP/1.1: the listener's 'upgrade' event hands us the
// request, its raw socket and the bytes already read past the headers. We send the request to an
// upstream with the same Upgrade header; if it answers 101, its status line and headers go back
// to the client as they came, and from then on the two sockets are piped to each other (bytes
// both ways, backpressure by pipe()); the end or error of either side ends the other.
// Any other answer is relayed as an ordinary response, after which the connection closes.
//
// HTTP/2 clients open WebSockets with extended CONNECT (RFC 8441), which an HTTP/2 listener
// offers when there are proxy rules: see tunnelFromHttp2.

const crypto = require('node:crypto');
const http = require('node:http');
const net = require('node:net');
const { upstreamRequestHeaders, clientResponseHeaders } = require('./forward-headers');
const { upstreamPath } = require('./rules');
const { writeHeadFrom } = require('../../http/headers');

const CLOSE_GRACE_MS = 1000;

// The upstream request that asks for the upgrade, with its own connection (an upgraded connection
// is never returned to the pool): connect ms to connect, then headers ms for the answer (the
// socket's idle timer serves both).
function upgradeRequest(upstream, rule, req, method, headers) {
  const { target } = upstream;
  const { timeouts } = rule;
  const upReq = upstream.connection.module.request({
    agent: false,
    method,
    hostname: target.hostname,
    port: target.port,
    socketPath: target.socketPath,
    path: upstreamPath(rule, target, req.url),
    headers,
    servername: target.protocol === 'https:' && !net.isIP(target.hostname) ? target.hostname : '',
    rejectUnauthorized: upstream.connection.agent.options.rejectUnauthorized !== false,
    timeout: timeouts.connect,
  });
  upReq.on('socket', (s) => s.once('connect', () => s.setTimeout(timeouts.headers)));
  upReq.on('timeout', () => upReq.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
  return upReq;
}

// HTTP/1.1: req.socket and req.upgradeHead (lib/net/upgrade.js); HTTP/2: an extended CONNECT.
// res: a response for any answer that is not the switch (an error page, a refusal relayed).
// protocol: what the client asked for, in lower case (upgrade-policy.js allowed it).
function tunnel(req, res, rule, ctx, protocol) {
  if (req.httpVersionMajor === 2) return tunnelFromHttp2(req, res, rule, ctx, protocol);
  const socket = req.socket;
  const head = req.upgradeHead || Buffer.alloc(0);
  const upstream = rule.pool.pick(new Set());
  const { target } = upstream;
  const { timeouts } = rule;
  let upgraded = false;
  upstream.active++;
  socket.once('close', () => {
    upstream.active--;
    if (!upgraded) upReq.destroy();
  });

  const headers = upstreamRequestHeaders(req, rule, target, { ...ctx, upgrade: req.headers.upgrade });
  const upReq = upgradeRequest(upstream, rule, req, req.method, headers);
  upReq.on('error', (error) => {
    if (upgraded) return;
    upstream.recordFailure(rule.pool.passive);
    ctx.log.warn(`proxy: upgrade ${req.url} -> ${upstream.label}: ${error.code || error.message}; answering 502`);
    if (!res.headersSent) ctx.sendError(req, res, 502);
    else socket.destroy();
  });
  upReq.on('upgrade', (upRes, upSocket, upHead) => {
    if (!switchedTo(protocol, upRes, upSocket, () => `proxy: upgrade ${req.url} -> ${upstream.label}`, ctx)) return ctx.sendError(req, res, 502);
    upgraded = true;
    upstream.recordSuccess();
    res.statusCode = upRes.statusCode; // for the access log; the status line goes out raw below
    socket.write(statusAndHeaders(upRes));
    if (upHead.length) socket.write(upHead);
    if (head.length) upSocket.write(head);
    join(socket, upSocket, timeouts.tunnelIdle);
  });
  // A refusal to upgrade (a 401, a 404...) goes back as an ordinary response.
  upReq.on('response', (upRes) => {
    writeHeadFrom(req, res, upRes.statusCode, upRes.statusMessage, clientResponseHeaders(upRes, rule));
    upRes.pipe(res);
  });
  upReq.end();
}

// HTTP/2 (RFC 8441): the client's CONNECT stream becomes an HTTP/1.1 WebSocket handshake upstream
// (GET with Upgrade, and the Sec-WebSocket-Key HTTP/2 has no use for); the upstream's 101 becomes
// a 200 on the stream, and from then on the stream and the upstream socket are piped together.
function tunnelFromHttp2(req, res, rule, ctx, protocol) {
  const upstream = rule.pool.pick(new Set());
  const { target } = upstream;
  const { timeouts } = rule;
  let upgraded = false;
  upstream.active++;
  res.once('close', () => {
    upstream.active--;
    if (!upgraded) upReq.destroy();
  });
  const headers = upstreamRequestHeaders(req, rule, target, { ...ctx, upgrade: protocol });
  if (protocol === 'websocket') {
    headers['sec-websocket-key'] = crypto.randomBytes(16).toString('base64');
    headers['sec-websocket-version'] = headers['sec-websocket-version'] || '13';
  }
  const upReq = upgradeRequest(upstream, rule, req, 'GET', headers);
  upReq.on('error', (error) => {
    if (upgraded) return;
    upstream.recordFailure(rule.pool.passive);
    ctx.log.warn(`proxy: HTTP/2 CONNECT ${req.url} -> ${upstream.label}: ${error.code || error.message}; answering 502`);
    if (!res.headersSent) ctx.sendError(req, res, 502);
    else res.destroy();
  });
  upReq.on('upgrade', (upRes, upSocket, upHead) => {
    if (!switchedTo(protocol, upRes, upSocket, () => `proxy: HTTP/2 CONNECT ${req.url} -> ${upstream.label}`, ctx)) return ctx.sendError(req, res, 502);
    upgraded = true;
    upstream.recordSuccess();
    const answer = {};
    for (const name of ['sec-websocket-protocol', 'sec-websocket-extensions']) if (upRes.headers[name]) answer[name] = upRes.headers[name];
    res.writeHead(200, answer);
    if (upHead.length) res.write(upHead);
    upSocket.setTimeout(timeouts.tunnelIdle, () => upSocket.destroy());
    upSocket.setNoDelay(true);
    upSocket.on('error', () => upSocket.destroy());
    upSocket.once('close', () => {
      if (!res.writableEnded) res.end(); // END_STREAM; the client ends its side, or the grace does
      setTimeout(() => res.destroy(), CLOSE_GRACE_MS).unref();
    });
    res.once('close', () => upSocket.destroy());
    req.pipe(upSocket);
    upSocket.pipe(res);
  });
  upReq.on('response', (upRes) => {
    res.writeHead(upRes.statusCode, clientResponseHeaders(upRes, rule));
    upRes.pipe(res);
  });
  upReq.end();
  return undefined;
}

// The sockets are joined only when the upstream's 101 names the protocol asked for: an upstream
// that switches to something else would be spoken to in a protocol neither side agreed on.
function switchedTo(protocol, upRes, upSocket, describe, ctx) {
  const switched = String(upRes.headers.upgrade || '').trim().toLowerCase();
  if (switched === protocol) return true;
  upSocket.destroy();
  ctx.log.warn(`${describe()}: the upstream switched to ${JSON.stringify(switched)}, not ${JSON.stringify(protocol)}; answering 502`);
  return false;
}

// Two sockets become one pipe. When one side ends, the other is ended after what is in flight
// (pipe), and the ended side is finished too, so it closes even where half-open sockets are
// allowed; when one side closes, the other gets CLOSE_GRACE_MS to flush, then is destroyed.

function join(client, upstream, idleMs) {
  for (const [from, to] of [[client, upstream], [upstream, client]]) {
    from.setTimeout(idleMs, () => from.destroy());
    from.setNoDelay(true);
    from.on('error', () => from.destroy());
    from.once('end', () => from.end());
    from.once('close', () => closeSoon(to));
    from.pipe(to);
  }
}

function closeSoon(socket) {
  if (socket.destroyed) return;
  socket.end();
  setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
}

function statusAndHeaders(upRes) {
  let text = `HTTP/1.1 ${upRes.statusCode} ${upRes.statusMessage || http.STATUS_CODES[upRes.statusCode] || ''}\r\n`;
  const raw = upRes.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) text += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return `${text}\r\n`;
}

module.exports = { tunnel };
