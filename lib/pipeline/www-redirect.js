'use strict';
// Stage: `wwwredirect` (SVR.JS). A request whose Host is exactly `domain` (port aside) gets a 301
// to the same URL on www.`domain`, same scheme and port. Runs right after sanitizing, so the URL
// it sends is the clean one. null unless wwwredirect is true and domain is set.

const { requestHost } = require('../http/host');

function createWwwRedirectStage(site) {
  const { wwwredirect, domain } = site.config;
  if (wwwredirect !== true || typeof domain !== 'string' || domain === '' || domain.startsWith('www.')) return null;
  const wanted = domain.toLowerCase();
  return function wwwRedirect(req, res, next) {
    if (requestHost(req) !== wanted) return next();
    const host = String(req.headers.host || req.headers[':authority'] || '');
    const port = /:(\d{1,5})$/.exec(host);
    const scheme = req.socket && req.socket.encrypted ? 'https' : 'http';
    const location = `${scheme}://www.${wanted}${port ? `:${port[1]}` : ''}${req.url}`;
    res.writeHead(301, { Location: location, 'Content-Length': 0 });
    return res.end();
  };
}

module.exports = { createWwwRedirectStage };
