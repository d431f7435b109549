'use strict';
// ACME HTTP-01 (RFC 8555 §8.3): GET /.well-known/acme-challenge/<token> answered with the key
// authorization, before any stage a user configures (rewrite, access rules, the proxy, scripts),
// so none of them can shadow it. The whole prefix is ACME's: an unknown token, a token asked for
// another host, or a path that is no token gets 404; another method gets 405.
// Built only with ACME on; `answers` (the worker's, acme/challenges.js) knows the tokens.

const { requestHost } = require('../http/host');

const PREFIX = '/.well-known/acme-challenge/';

function createAcmeChallengeStage(site, answers) {
  if (!answers) return null;
  return function acmeChallenge(req, res, next) {
    const url = req.url;
    if (typeof url !== 'string' || !url.startsWith(PREFIX)) return next();
    if (req.method !== 'GET' && req.method !== 'HEAD') return site.sendError(req, res, 405, { headers: { Allow: 'GET, HEAD' } });
    const query = url.indexOf('?');
    const token = url.slice(PREFIX.length, query === -1 ? undefined : query);
    return answers.http01(token, requestHost(req)).then((keyAuthorization) => {
      if (keyAuthorization === null) return site.sendError(req, res, 404);
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': Buffer.byteLength(keyAuthorization), 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : keyAuthorization);
      return undefined;
    });
  };
}

module.exports = { createAcmeChallengeStage, PREFIX };
