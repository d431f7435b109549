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

function readFirst(dir, names) {
  for (const name of names) {
    try {
      return fs.readFileSync(path.join(dir, name));
    } catch { /* try the next one */ }
  }
  return Buffer.alloc(0);
}

function createHeadFoot(site) {
  if (site.config.enableIncludingHeadAndFootInHTML !== true) return null;
  const head = readFirst(site.root, ['.head', 'head.html']);
  const foot = readFirst(site.root, ['.foot', 'foot.html']);
  if (head.length === 0 && foot.length === 0) return null;
  const tag = crypto.createHash('sha256').update(head).update('\0').update(foot).digest('hex').slice(0, 12);
  const enableETag = site.config.enableETag !== false;
  const { sendError } = site;
  // head.html and foot.html themselves are served as they are.
  const own = new Set(['head.html', 'foot.html'].map((name) => path.join(site.root, name)));

  function applies(real) {
    return /\.html?$/i.test(real) && !own.has(real);
  }

  function serve(req, res, { real, stats }) {
    const etag = enableETag ? `${makeETag(stats).slice(0, -1)}-hf${tag}"` : null;
    const lastModified = stats.mtime.toUTCString();
    const headers = { 'Content-Type': 'text/html; charset=utf-8', 'Last-Modified': lastModified, 'X-Content-Type-Options': 'nosniff' };
    if (etag) headers.ETag = etag;
    const precondition = evaluatePreconditions(req, { etag, mtime: Math.floor(stats.mtimeMs / 1000) });
    if (precondition === 304) return res.writeHead(304, etag ? { ETag: etag, 'Last-Modified': lastModified } : { 'Last-Modified': lastModified }).end();
    if (precondition === 412) return sendError(req, res, 412);
    headers['Content-Length'] = head.length + stats.size + foot.length;
    if (req.method === 'HEAD') return res.writeHead(200, headers).end();
    const file = stats.size === 0 ? null : fs.createReadStream(real, { start: 0, end: stats.size - 1 });
    if (file === null) return res.writeHead(200, headers).end(Buffer.concat([head, foot]));
    return new Promise((resolve) => {
      let sent = 0;
      file.once('error', (error) => {
        if (!res.headersSent) sendError(req, res, 500, { error });
        else res.destroy();
        resolve();
      });
      file.once('open', () => {
        res.writeHead(200, headers);
        res.write(head);
      });
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
