'use strict';
// Where a listener listens: `port` and `sport` as SVR.JS 3.9+ reads them.
//
//   parseListenAddress(value) -> { port, host? } | { path } | { error }
//     8080, "8080"            every interface (Node's default: :: dual-stack, else 0.0.0.0)
//     "127.0.0.1:8080"        one IPv4 address
//     "[::1]:8080"            one IPv6 address
//     "/run/svr/http.sock"    a Unix socket (any value with a "/"; "./svr.sock" is relative to the
//                             config file's directory once the loader has resolved it)
//   describeListenAddress(address) -> "http://127.0.0.1:8080" style text for the start banner,
//     from server.address() (what was really bound, not what the config asked for).

const fs = require('node:fs');
const net = require('node:net');

function parsePort(text) {
  if (!/^\d{1,5}$/.test(text)) return null;
  const port = Number(text);
  return port <= 65535 ? port : null;
}

function parseListenAddress(value) {
  if (Number.isInteger(value)) return value >= 0 && value <= 65535 ? { port: value } : { error: 'a port must be 0 to 65535' };
  if (typeof value !== 'string' || value === '') return { error: 'expected a port number or an address' };
  if (value.includes('/')) return { path: value };
  const plain = parsePort(value);
  if (plain !== null) return { port: plain };
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(value);
  const unbracketed = /^([^:[\]]+):(\d+)$/.exec(value);
  const match = bracketed || unbracketed;
  if (!match) return { error: 'expected a port, "ADDRESS:PORT", "[IPv6]:PORT" or a Unix socket path containing "/"' };
  const [, host, portText] = match;
  const family = net.isIP(host);
  if (family === 0 && host !== 'localhost') return { error: `${JSON.stringify(host)} is not an IP address` };
  if (bracketed && family !== 6) return { error: 'only an IPv6 address goes in brackets' };
  if (unbracketed && family === 6) return { error: 'an IPv6 address goes in brackets: "[::1]:8080"' };
  const port = parsePort(portText);
  if (port === null) return { error: 'a port must be 0 to 65535' };
  return { port, host };
}

// server.address(): { address, family, port } for TCP, the path (a string) for a Unix socket.
function describeListenAddress(scheme, address) {
  if (typeof address === 'string') return `${scheme}+unix:${address}`;
  if (!address) return `${scheme}://(not listening)`;
  const host = address.family === 'IPv6' || address.family === 6 ? `[${address.address}]` : address.address;
  return `${scheme}://${host}:${address.port}`;
}

// A Unix socket file left by an earlier run makes listen() fail with EADDRINUSE; the primary
// removes it before any worker listens (only a socket: never a regular file someone pointed at).
function removeStaleSockets(config, log) {
  for (const key of ['port', 'sport']) {
    const { path } = parseListenAddress(config[key]);
    if (path === undefined) continue;
    try {
      if (!fs.lstatSync(path).isSocket()) continue;
      fs.unlinkSync(path);
      log.info(`${key}: removed the old socket file ${path}`);
    } catch (error) {
      if (error.code !== 'ENOENT') log.warn(`${key}: cannot remove the old socket file ${path}: ${error.message}`);
    }
  }
}

module.exports = { parseListenAddress, describeListenAddress, removeStaleSockets };
