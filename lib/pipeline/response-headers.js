'use strict';
// Stage 3: the headers every response gets, computed once in site.headers (site.js).
//
//   serverHeaders: Server and the fixed customHeaders, set first thing for every request, so that
//                  even a 400 from the sanitizer names the server and carries the site's headers;
//   pathHeaders:   the customHeaders with SVR.JS's `{path}`, filled with req.url after rewriting
//                  (null when there are none).

const { fillPath, firstMatch } = require('./site');
const { deferHeaders } = require('../http/response');

// On svr's HTTP/1 responses the fixed headers wait until the headers are read or written
// (http/response.js: the static stage folds them into its own header object); elsewhere they
// are set at once.
function createServerHeadersStage(site) {
  const fixed = site.headers.fixed;
  return function serverHeaders(req, res, next) {
    if (!deferHeaders(res, fixed)) for (let i = 0; i < fixed.length; i++) res.setHeader(fixed[i][0], fixed[i][1]);
    next();
  };
}

function createPathHeadersStage(site) {
  const withPath = site.headers.withPath;
  if (withPath.length === 0) return null;
  return function pathHeaders(req, res, next) {
    // req.url is sanitized ASCII, so the filled value is always a valid header value.
    for (let i = 0; i < withPath.length; i++) res.setHeader(withPath[i][0], fillPath(withPath[i][1], req.url));
    next();
  };
}

// customHeadersVHost (SVR.JS 4.4+): the first matching host's headers, set over customHeaders,
// after rewriting ({path} is filled as for customHeaders). null when there are none.
function createHostHeadersStage(site) {
  const hosts = site.hostHeaders;
  if (hosts.length === 0) return null;
  return function hostHeaders(req, res, next) {
    const i = firstMatch(hosts, req);
    if (i === -1) return next();
    const { fixed, withPath } = hosts[i];
    for (let k = 0; k < fixed.length; k++) res.setHeader(fixed[k][0], fixed[k][1]);
    for (let k = 0; k < withPath.length; k++) res.setHeader(withPath[k][0], fillPath(withPath[k][1], req.url));
    return next();
  };
}

module.exports = { createServerHeadersStage, createPathHeadersStage, createHostHeadersStage };
