'use strict';
// Stage: who the client is, behind a proxy. Runs only when `enableIPSpoofing` is true or
// `trustedProxies` lists someone (otherwise the peer's address is the client's, and no stage is built).
//
// - enableIPSpoofing (SVR.JS): the first X-Forwarded-For entry, whoever sent it.
// - trustedProxies: X-Forwarded-For is believed only from a listed peer; the client is the nearest
//   entry that is not itself a listed proxy.
// A header that is believed but malformed is answered 400. The result is req.svr.clientAddress,
// which the block list, the access rules and the access log read, and SVR.JS's socket fields for
// scripts and mods: req.socket.realRemoteAddress/realRemotePort (port null when forwarded) and
// originalRemoteAddress/originalRemotePort (the peer). They are set on every request, since a
// kept-alive connection carries requests with different headers.

const net = require('node:net');
const { compileAddressList } = require('../../http/address-list');
const { firstForwarded, nearestUntrusted } = require('../../http/forwarded-for');

function createClientAddressStage(site) {
  const spoofing = site.config.enableIPSpoofing;
  const trusted = compileAddressList(site.config.trustedProxies || [], 'trustedProxies');
  if (!spoofing && trusted.size === 0) return null;

  const forwardedFor = (req, peer) => {
    const header = req.headers['x-forwarded-for'];
    if (spoofing) return firstForwarded(header);
    return trusted.has(peer) ? nearestUntrusted(header, trusted.has) : undefined;
  };

  return function clientAddress(req, res, next) {
    const socket = req.socket;
    const peer = socket.remoteAddress;
    const forwarded = forwardedFor(req, peer);
    if (forwarded === null) return site.sendError(req, res, 400); // the access log shows it; no line per bad header
    const address = forwarded === undefined ? peer : asPeerFamily(forwarded, peer);
    req.svr.clientAddress = address;
    socket.originalRemoteAddress = peer;
    socket.originalRemotePort = socket.remotePort;
    socket.realRemoteAddress = address;
    socket.realRemotePort = forwarded === undefined ? socket.remotePort : null;
    return next();
  };
}

// As SVR.JS: an IPv4 client behind an IPv6 peer is written ::ffff:a.b.c.d, like Node writes peers.
function asPeerFamily(address, peer) {
  return net.isIPv4(address) && typeof peer === 'string' && peer.includes(':') ? `::ffff:${address}` : address;
}

module.exports = { createClientAddressStage };
