'use strict';
// SVR.JS's page customisation for static HTML (`enableIncludingHeadAndFootInHTML`, SVR.JS 4.3+;
// 3.x always did it): the web root's `.head` (else `head.html`) is sent before every static .html
// file and `.foot` (else `foot.html`) after it. Both are read once when the pipeline is built
// (a change needs a reload, SIGHUP). Such a page is answered here, not by respond.js: no range and
// no compression, since the bytes are not the file's; its ETag covers head, file and foot.
//
//   createHeadFoot(site) -> null (off, or neither file) | { applies(real), serve(req, res, found) }

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { makeETag, evaluatePreconditions } = require('./conditional');
const { errorStatus } = require('../path-policy');

// Read from a descriptor checked to lie where the web root's symlink rule allows (site.webRoot).
function readFirst(site, names) {
  for (const name of names) {
    try {
      return site.webRoot.readContained(path.join(site.root, name), Infinity, null);
    } catch { /* try the next one */ }
  }
  return Buffer.alloc(0);
}

function createHeadFoot(site) {
  if (site.config.enableIncludingHeadAndFootInHTML !== true) return null;
  const head = readFirst(site, ['.head', 'head.html']);
  const foot = readFirst(site, ['.foot', 'foot.html']);
  if (head.length === 0 && foot.length === 0) return null;
  const tag = crypto.createHash('sha256').update(head).update('\0').update(foot).digest('hex').slice(0, 12);
  const enableETag = site.config.enableETag !== false;
  const { sendError } = site;
  // head.html and foot.html themselves are served as they are.
  const own = new Set(['head.html', 'foot.html'].map((name) => path.join(site.root, name)));

  function applies(real) {
    return /\.html?$/i.test(real) && !own.has(real);
  }

  // What is sent is decided from a descriptor checked to be at `real` (site.webRoot), never from
  // the static stage's stat: a file swapped for a link after that check is a 404.
  function serve(req, res, found) {
    let opened;
    try {
      opened = site.webRoot.openSync(found.real);
    } catch (error) {
      return sendError(req, res, errorStatus(error), { error: errorStatus(error) === 500 ? error : undefined });
    }
    if (opened === null || !opened.stats.isFile()) {
      if (opened !== null) fs.closeSync(opened.fd);
      return sendError(req, res, 404);
    }
    return serveOpened(req, res, opened);
  }

  function serveOpened(req, res, { fd, stats }) {
    let closed = false;
    const close = () => {
      if (!closed) fs.closeSync(fd);
      closed = true;
    };
    const etag = enableETag ? `${makeETag(stats).slice(0, -1)}-hf${tag}"` : null;
    const lastModified = stats.mtime.toUTCString();
    const headers = { 'Content-Type': 'text/html; charset=utf-8', 'Last-Modified': lastModified, 'X-Content-Type-Options': 'nosniff' };
    if (etag) headers.ETag = etag;
    const precondition = evaluatePreconditions(req, { etag, mtime: Math.floor(stats.mtimeMs / 1000) });
    if (precondition !== 0 || req.method === 'HEAD' || stats.size === 0) close();
    if (precondition === 304) return res.writeHead(304, etag ? { ETag: etag, 'Last-Modified': lastModified } : { 'Last-Modified': lastModified }).end();
    if (precondition === 412) return sendError(req, res, 412);
    headers['Content-Length'] = head.length + stats.size + foot.length;
    if (req.method === 'HEAD') return res.writeHead(200, headers).end();
    if (stats.size === 0) return res.writeHead(200, headers).end(Buffer.concat([head, foot]));
    closed = true; // the stream owns the descriptor now
    const file = fs.createReadStream(null, { fd, start: 0, end: stats.size - 1, autoClose: true });
    return new Promise((resolve) => {
      let sent = 0;
      file.once('error', (error) => {
        if (!res.headersSent) sendError(req, res, 500, { error });
        else res.destroy();
        resolve();
      });
      res.writeHead(200, headers);
      res.write(head);
      file.on('data', (chunk) => {
        sent += chunk.length;
        if (!res.write(chunk)) file.pause();
      });
      res.on('drain', () => file.resume());
      file.once('end', () => {
        // The file shrank since the stat: the announced length cannot be kept; cut the connection.
        if (sent !== stats.size) res.destroy();
        else res.end(foot);
        resolve();
      });
      res.once('close', () => file.destroy());
    });
  }

  return { applies, serve };
}

module.exports = { createHeadFoot };
