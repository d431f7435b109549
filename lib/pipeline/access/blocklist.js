'use strict';
// Stage: `blacklist` (SVR.JS's name). A client whose address is in the list gets 403 for every
// request, before the URL is even looked at. The list is compiled once (net.BlockList); the
// address is the resolved one (client-address.js) when a proxy speaks for the client.

const { compileAddressList } = require('../../http/address-list');

function createBlocklistStage(site) {
  const list = compileAddressList(site.config.blacklist || [], 'blacklist');
  if (list.size === 0) return null;
  return function blocklist(req, res, next) {
    const address = req.svr.clientAddress;
    if (!list.has(address)) return next();
    return site.sendError(req, res, 403);
  };
}

module.exports = { createBlocklistStage };
