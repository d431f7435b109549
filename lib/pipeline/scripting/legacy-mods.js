'use strict';
// SVR.JS's "legacy" API (3.x `.tar.gz` mods, and serverSideScript.js) on top of the 4.x one.
//
// A legacy mod's index.js exports a constructor; svr makes ONE instance per worker at load. Per
// request SVR.JS calls
//   instance.callback(req, res, serverconsole, responseEnd, href, ext, uobject, search,
//     defaultpage, users, page404, head, foot, fd, elseCallback, configJSON, callServerError,
//     getCustomHeaders, origHref, redirect, parsePostData, authUser)
// which returns the function that handles the request; and, for CONNECT and absolute-form
// (forward proxy) requests, instance.proxyCallback(req, socket, head, configJSON, serverconsole,
// elseCallback), which returns the function that handles the tunnel.
//
//   isLegacyModConstructor(value)       a function whose prototype has a callback() method
//   wrapLegacyMod(Mod, label)           -> 4.x handler (req, res, logFacilities, config, next),
//                                          with .proxy when the mod has a proxyCallback
//   callLegacy(fn, thisArg, req, res, logFacilities, config, next, postData)
//                                       fn called with the 22 values above for one request (the
//                                       script uses it too); postData: parsePostData's options
//                                       ({ limit }), made once per stage or mod

const path = require('node:path');
const { createParsePostData } = require('./post-data');

const DEFAULT_PAGE = 'index.html';

function isLegacyModConstructor(value) {
  return typeof value === 'function' && value.prototype !== undefined && value.prototype !== null &&
    typeof value.prototype.callback === 'function';
}

// SVR.JS's ext: the lower-case extension of the last path segment, without the dot.
function extensionOf(pathname) {
  return path.posix.extname(pathname || '').slice(1).toLowerCase();
}

// The 22 arguments are passed one by one: no array is made for them per request.
function callLegacy(fn, thisArg, req, res, logFacilities, config, next, postData) {
  const parsed = req.parsedURL;
  return fn.call(
    thisArg, req, res, logFacilities, res.responseEnd, parsed.pathname, extensionOf(parsed.pathname), parsed,
    parsed.search, DEFAULT_PAGE, config.users, config.page404, res.head, res.foot, '', next, config,
    res.error, config.getCustomHeaders, req.originalParsedURL.pathname, res.redirect, createParsePostData(req, res, postData),
    req.authUser,
  );
}

function wrapLegacyMod(Mod, label) {
  const instance = new Mod();
  let postData = null; // parsePostData's options, made again only when the config is another
  const handler = function legacyMod(req, res, logFacilities, config, next) {
    if (postData === null || postData.limit !== config.maxPostDataSize) postData = { limit: config.maxPostDataSize };
    const handle = callLegacy(instance.callback, instance, req, res, logFacilities, config, next, postData);
    if (typeof handle !== 'function') throw new TypeError(`${label}: Mod.prototype.callback must return a function, returned ${typeof handle}`);
    return handle();
  };
  if (typeof instance.proxyCallback === 'function') {
    handler.proxy = function legacyProxy(req, socket, head, logFacilities, config, next) {
      const handle = instance.proxyCallback(req, socket, head, config, logFacilities, next);
      if (typeof handle !== 'function') throw new TypeError(`${label}: Mod.prototype.proxyCallback must return a function, returned ${typeof handle}`);
      return handle();
    };
  }
  return handler;
}

module.exports = { isLegacyModConstructor, wrapLegacyMod, callLegacy };
