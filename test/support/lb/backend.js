'use strict';
// The application behind svr's proxy in the load-balancer test: GET /whoami answers what it was
// told about the client; /ws is a WebSocket echo. Usage: node backend.js ADDRESS PORT

const http = require('node:http');
const { acceptEcho } = require('./websocket');

const [address, port] = process.argv.slice(2);
// `node --test test/` runs every file under test/: without arguments this file does nothing.
if (process.argv.length < 4) return;
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ url: req.url, peer: req.socket.remoteAddress, xff: req.headers['x-forwarded-for'], forwarded: req.headers.forwarded }));
});
server.on('upgrade', (req, socket) => acceptEcho(req, socket));
server.keepAliveTimeout = 65000;
server.listen(Number(port), address, () => console.log(`backend listening on ${address}:${port}`));
process.on('SIGTERM', () => process.exit(0));
