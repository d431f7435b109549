'use strict';
// One renderer for every error status (stage 6 of the pipeline).
//
// createErrorPages(site) -> sendError(req, res, status, { extName, error, headers })
//   - built-in pages are precomputed per status when the worker starts;
//   - custom pages (`errorPages: [{scode, path}]`, `page404`, paths relative to wwwroot) are read
//     once at start (and on reload), never per request;
//   - the footer names the server per `exposeServerVersion`, and a mod (`extName`) only when
//     `exposeModsInErrorPages` is true;
//   - a stack trace only when `stackHidden` is false; `serverAdministratorEmail` on 5xx pages when
//     one is set (not empty, not SVR.JS's "[no contact information]");
//   - clients whose Accept prefers JSON get `{"error":{"status","message","description"}}`;
//   - with enableIncludingHeadAndFootInHTML, custom pages are sent between the web root's head and
//     foot (site.headFoot), as SVR.JS sent them; svr's own pages are whole documents and are not.
// It never throws: if the response has already started it destroys the response instead.

const path = require('path');
const http = require('http');
const { appendVary } = require('../http/headers');
const { escapeHTML, prefersJSON, pageHead } = require('../http/html');
const { compileVirtualHosts } = require('./site');

const MAX_CUSTOM_PAGE = 1024 * 1024;

const DESCRIPTIONS = {
  400: 'The server could not understand the request.',
  401: 'Authentication is required to access this resource.',
  403: 'You do not have permission to access this resource.',
  404: 'The requested resource was not found on this server.',
  405: 'The request method is not allowed for this resource.',
  406: 'The server cannot produce a response the client accepts.',
  408: 'The server timed out waiting for the request.',
  409: 'The request conflicts with the current state of the resource.',
  410: 'The requested resource is no longer available.',
  411: 'The request needs a Content-Length header.',
  412: 'A precondition in the request headers was not met.',
  413: 'The request body is larger than the server allows.',
  414: 'The request URL is longer than the server allows.',
  415: 'The request body is in a format the server does not support.',
  416: 'The requested range cannot be satisfied.',
  417: 'The expectation in the Expect header cannot be met.',
  418: 'The server refuses to brew coffee because it is a teapot.',
  421: 'The request was directed at a server that cannot answer it.',
  422: 'The server understood the request but cannot process it.',
  429: 'Too many requests were sent in a short time.',
  431: 'The request headers are larger than the server allows.',
  451: 'This resource is unavailable for legal reasons.',
  500: 'The server encountered an unexpected condition.',
  501: 'The server does not support the functionality needed for this request.',
  502: 'The server received an invalid response from an upstream server.',
  503: 'The server is temporarily unable to handle the request.',
  504: 'An upstream server did not answer in time.',
  505: 'The HTTP version of the request is not supported.',
};

// SVR.JS obfuscates the address a little on error pages: a.b@c.d -> a[dot]b[at]c[dot]d
function obfuscateEmail(email) {
  return String(email).replace(/\./g, '[dot]').replace(/@/g, '[at]');
}

// SVR.JS's default stands for "no address": a visitor is better told nothing than that.
const NO_CONTACT = '[no contact information]';
function hasContact(email) {
  return typeof email === 'string' && email.trim() !== '' && email.trim() !== NO_CONTACT;
}

function reason(status) {
  return http.STATUS_CODES[status] || 'Error';
}

// The web root's head and foot as text, for custom error pages; empty unless
// enableIncludingHeadAndFootInHTML.
function customPageFrame(site) {
  if (!site.config.enableIncludingHeadAndFootInHTML || !site.headFoot) return { head: '', foot: '' };
  return { head: site.headFoot.head.toString('utf8'), foot: site.headFoot.foot.toString('utf8') };
}

function createErrorPages(site) {
  const { config, log } = site;
  const server = site.serverName;
  const showMods = config.exposeModsInErrorPages;
  const stackHidden = config.stackHidden;
  const contactHTML = hasContact(config.serverAdministratorEmail) ? escapeHTML(obfuscateEmail(config.serverAdministratorEmail)) : null;
  const root = site.root;
  const { head: pageHeadText, foot: pageFootText } = customPageFrame(site);

  // --- custom pages, read once now -------------------------------------------------------------
  // status -> [{ matches(req) | null, template }], in SVR.JS's order: `errorPages` entries (those
  // with `host`/`ip` only for matching requests), then for 404 `page404`, then the automatic pages
  // `.N` and `N.html` in the web root (SVR.JS 3.0+). The first that applies answers.
  const custom = new Map();
  function loadCustom(status, rel, keyPath, matches = null) {
    const known = custom.get(status) || [];
    if (known.some((page) => page.matches === null) || typeof rel !== 'string' || rel === '' || !root) return;
    const file = path.resolve(root, rel);
    try {
      // Below the web root, read under its symlink rule from a checked descriptor (site.webRoot).
      custom.set(status, [...known, { matches, template: site.webRoot.readContained(file, MAX_CUSTOM_PAGE) }]);
    } catch (err) {
      if (err.code === 'EFBIG') {
        log.warn(`${keyPath}: ${rel} is larger than 1 MiB; using the built-in page for ${status}`);
      } else if (err.code === 'EISDIR') {
        // not a file: the built-in page
      } else if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') {
        log.warn(`${keyPath}: cannot read ${rel} (${err.code || err.message}); using the built-in page for ${status}`);
      } else if (keyPath.startsWith('errorPages') && matches === null) {
        log.warn(`${keyPath}: ${rel} does not exist; using the built-in page for ${status}`);
      }
    }
  }
  compileVirtualHosts(config.errorPages).forEach(({ entry, matches }, i) => {
    const always = entry.host === undefined && entry.ip === undefined;
    if (Number.isInteger(entry.scode)) loadCustom(entry.scode, entry.path, `errorPages[${i}].path`, always ? null : matches);
  });
  loadCustom(404, config.page404, 'page404');
  for (const code of Object.keys(DESCRIPTIONS)) {
    loadCustom(Number(code), `.${code}`, `.${code}`);
    loadCustom(Number(code), `${code}.html`, `${code}.html`);
  }

  function customPage(status, req) {
    const pages = custom.get(status);
    if (pages === undefined) return null;
    const page = pages.find((p) => p.matches === null || p.matches(req));
    return page ? page.template : null;
  }

  // --- built-in pages, precomputed per status ----------------------------------------------------
  const builtin = new Map();
  function pageParts(status) {
    let parts = builtin.get(status);
    if (parts) return parts;
    const title = `${status} ${escapeHTML(reason(status))}`;
    const desc = escapeHTML(DESCRIPTIONS[status] || 'An error occurred while handling the request.');
    const head = `${pageHead(title)}<h1>${title}</h1><p>${desc}</p>`;
    const contact = (status >= 500 && contactHTML !== null
      ? `<p>If the problem persists, contact the server administrator at ${contactHTML}.</p>` : '') +
      '<p><a href="/">Go to the home page</a></p>';
    parts = {
      head,
      contact,
      footerStart: `<footer>${escapeHTML(server)}`,
      tail: '</footer></main></body></html>\n',
      json: { status, message: reason(status), description: DESCRIPTIONS[status] || undefined },
    };
    if (Number.isInteger(status) && status >= 100 && status < 600) builtin.set(status, parts);
    return parts;
  }
  for (const code of Object.keys(DESCRIPTIONS)) pageParts(Number(code));

  function stackText(error) {
    if (stackHidden || !error) return null;
    return String((error && error.stack) || error);
  }

  function fillCustom(template, status, req, extName, error) {
    const serverName = server + (showMods && extName ? ` ${extName}` : '');
    const values = {
      errorMessage: `${status} ${reason(status)}`,
      errorDesc: DESCRIPTIONS[status] || '',
      stack: stackText(error) || '[error stack hidden]',
      path: (req && req.url) || '',
      server: serverName,
      contact: obfuscateEmail(config.serverAdministratorEmail),
    };
    return template.replace(/\{(errorMessage|errorDesc|stack|path|server|contact)\}/g,
      (m, k) => escapeHTML(values[k]));
  }

  function sendError(req, res, status, options) {
    const opts = options || {};
    status = Number.isInteger(status) && status >= 400 && status <= 599 ? status : 500;
    try {
      if (res.headersSent) {
        // Too late for a page: cut the connection so the client sees the failure.
        res.destroy();
        return;
      }
      if (opts.error && status >= 500) {
        log.error(`${req && req.method} ${req && req.url}: ${opts.error && opts.error.stack || opts.error}`);
      }
      // Drop anything a previous stage meant for a successful response.
      for (const h of ['content-type', 'content-length', 'content-range', 'etag', 'last-modified',
        'content-encoding', 'content-disposition', 'accept-ranges']) {
        res.removeHeader(h);
      }
      if (opts.headers) {
        for (const name of Object.keys(opts.headers)) res.setHeader(name, opts.headers[name]);
      }
      const parts = pageParts(status);
      let body;
      let type;
      let template;
      if (prefersJSON(req)) {
        const err = Object.assign({}, parts.json);
        const stack = stackText(opts.error);
        if (stack) err.stack = stack;
        if (showMods && opts.extName) err.mod = String(opts.extName);
        body = JSON.stringify({ error: err }) + '\n';
        type = 'application/json; charset=utf-8';
      } else if ((template = customPage(status, req)) !== null) {
        body = pageHeadText + fillCustom(template, status, req, opts.extName, opts.error) + pageFootText;
        type = 'text/html; charset=utf-8';
      } else {
        const stack = stackText(opts.error);
        body = parts.head +
          (stack ? `<pre>${escapeHTML(stack)}</pre>` : '') +
          parts.contact + parts.footerStart +
          (showMods && opts.extName ? ` ${escapeHTML(opts.extName)}` : '') + parts.tail;
        type = 'text/html; charset=utf-8';
      }
      res.statusCode = status;
      res.setHeader('Content-Type', type);
      res.setHeader('Content-Length', Buffer.byteLength(body));
      res.setHeader('X-Content-Type-Options', 'nosniff');
      appendVary(res, 'Accept'); // HTML or JSON by Accept: keep shared caches from mixing them
      if (req && req.method === 'HEAD') res.end();
      else res.end(body);
    } catch (err) {
      log.error(`error page ${status} failed: ${err && err.stack || err}`);
      try { res.destroy(); } catch (e) { /* already gone */ }
    }
  }

  return sendError;
}

module.exports = { createErrorPages };
