'use strict';
// Stage 5: static files and directories.
//
// Our layer decides everything about a request before a file is opened:
//   method policy (GET/HEAD; OPTIONS -> 204 + Allow; else 405 + Allow), path policy (dotfiles,
//   the server's own files, realpath containment of the file and every parent, followSymlinks),
//   directories (trailing-slash 301, index.html/index.htm, listing or 403), validators and
//   conditionals (304/412), Range (206/416/ignored), HEAD (headers only).
// Only a GET that needs a body reaches serve-handler, and only after we opened the file ourselves
// (EACCES -> 403, ENOENT -> 404 are answered before any header is written). serve-handler then
// streams it through the `methods` we hand it:
//   lstat            -> the fstat of the fd we opened (never another path)
//   realpath         -> identity (the path given is already the real path)
//   createReadStream -> a stream on our fd, with an 'error' handler, destroyed when the response
//                       closes (aborted download), fd closed with it
//   readdir          -> never reached (directories never go to serve-handler)
//   sendError        -> our error renderer
// and its writeHead is trimmed so our Content-Type (mime-types 3.x), Last-Modified and ETag win
// and its Content-Disposition is dropped.

const fs = require('fs');
const path = require('path');
const { promisify } = require('util');
const mime = require('mime-types');
// Required on first use: since issue 7 most files are answered from memory (lib/hot-path.js) and
// serve-handler (with its own mime-db) only streams large files and ranges; ~9 MiB RSS per idle worker.
let serveHandlerModule = null;
function serveHandler(...args) {
  if (serveHandlerModule === null) serveHandlerModule = require('serve-handler');
  return serveHandlerModule(...args);
}
const { makeETag, evaluatePreconditions, ifRangeMatches, parseRange } = require('./conditional');
const { sanitizeTarget, encodePath } = require('../../http/target');
const { ALLOW } = require('../../http/headers');
const { createListing } = require('./listing');
const { createHotPath } = require('./respond');
const { lstatBeneath } = require('./file-cache');

const open = promisify(fs.open);
const fstat = promisify(fs.fstat);
const INDEX_FILES = ['index.html', 'index.htm'];

function errorStatus(err) {
  switch (err && err.code) {
    case 'ENOENT': case 'ENOTDIR': case 'ELOOP': case 'EISDIR': case 'ENAMETOOLONG': return 404;
    case 'EACCES': case 'EPERM': return 403;
    case 'EMFILE': case 'ENFILE': return 503;
    default: return 500;
  }
}

function contentType(file) {
  return mime.contentType(path.basename(file)) || 'application/octet-stream';
}

function gone(res) {
  return res.destroyed || !res.socket || res.socket.destroyed;
}


function createStaticStage(site) {
  const { config, sendError } = site;
  const realRoot = site.root;
  const allowDotfiles = config.allowDotfiles === true;
  const followSymlinks = config.followSymlinks === true;
  const enableETag = config.enableETag !== false;
  const trailingRedirect = config.disableTrailingSlashRedirects !== true;
  const listingEnabled = config.enableDirectoryListing === true;
  const rootPrefix = realRoot === '/' ? '/' : realRoot + path.sep;
  const protectedPaths = site.protectedPaths;

  function isProtected(real) {
    if (path.basename(real) === 'serverSideScript.js') return true;
    for (const p of protectedPaths) {
      if (real === p || real.startsWith(p + path.sep)) return true;
    }
    return false;
  }

  // relative path (no leading '/') has a segment starting with '.' other than a leading .well-known
  function hasDotSegment(rel) {
    if (allowDotfiles || rel === '') return false;
    const segs = rel.split(/[/\\]/);
    for (let i = 0; i < segs.length; i++) {
      const s = segs[i];
      if (s[0] === '.' && !(i === 0 && s === '.well-known')) return true;
    }
    return false;
  }

  function isHiddenReal(real) {
    if (isProtected(real)) return true;
    return hasDotSegment(path.relative(realRoot, real));
  }

  const listDirectory = createListing(site, { isHiddenReal, followSymlinks, realRoot });
  // Issue 7: files from memory and compressed (lib/hot-path.js); it declines what it does not do.
  const hotPath = createHotPath(config, { sendError, fileHeaders, isHiddenReal });

  // pathname: decoded, normalised URL path. Resolves { status } or { real, rel, stats }.
  async function resolvePath(pathname) {
    const lexicalRel = pathname.replace(/^\/+|\/+$/g, '');
    if (hasDotSegment(lexicalRel) || path.basename(lexicalRel) === 'serverSideScript.js') return { status: 404 };
    const lexical = lexicalRel === '' ? realRoot : path.join(realRoot, lexicalRel);
    if (!followSymlinks) {
      // No symlink may be on the way: an lstat per component below the root (one for a file at the
      // top) gives the same answers as realpath + stat with a third of the system calls (issue 7).
      let stats;
      try {
        stats = lstatBeneath(realRoot, lexicalRel);
      } catch (err) {
        return { status: errorStatus(err), error: err };
      }
      if (stats === null) return { status: 404 }; // a symlink somewhere on the way
      if (isProtected(lexical)) return { status: 404 };
      return { real: lexical, rel: lexical === realRoot ? '' : lexical.slice(rootPrefix.length), stats };
    }
    let real;
    try {
      real = fs.realpathSync.native(lexical); // synchronous: see "Why synchronous" in lib/hot-path.js
    } catch (err) {
      return { status: errorStatus(err), error: err };
    }
    if (real !== realRoot && !real.startsWith(rootPrefix)) return { status: 404 }; // escapes the root
    const rel = path.relative(realRoot, real);
    if (hasDotSegment(rel) || isProtected(real)) return { status: 404 };
    let stats;
    try {
      stats = fs.statSync(real);
    } catch (err) {
      return { status: errorStatus(err), error: err };
    }
    return { real, rel, stats };
  }

  function fileHeaders(real, stats) {
    const headers = {
      'Content-Type': contentType(real),
      'Last-Modified': stats.mtime.toUTCString(),
      'Accept-Ranges': 'bytes',
      'X-Content-Type-Options': 'nosniff',
    };
    if (enableETag) headers.ETag = makeETag(stats);
    return headers;
  }

  // What to answer for this file with these stats, without opening it.
  function decide(req, real, stats) {
    const validators = { etag: enableETag ? makeETag(stats) : null, mtime: Math.floor(stats.mtimeMs / 1000) };
    const pre = evaluatePreconditions(req, validators);
    if (pre) return { status: pre };
    if (req.method === 'GET' && stats.size > 0 && req.headers.range !== undefined &&
        ifRangeMatches(req.headers['if-range'], validators)) {
      const range = parseRange(req.headers.range, stats.size);
      if (range && range.unsatisfiable) return { status: 416 };
      if (range) return { status: 206, range };
    }
    return { status: 200 };
  }

  function answerWithoutBody(req, res, d, real, stats) {
    if (d.status === 412) {
      sendError(req, res, 412);
    } else if (d.status === 304) {
      const h = fileHeaders(real, stats);
      const out = { 'Last-Modified': h['Last-Modified'] };
      if (h.ETag) out.ETag = h.ETag;
      res.writeHead(304, out);
      res.end();
    } else if (d.status === 416) {
      res.writeHead(416, {
        'Content-Range': `bytes */${stats.size}`,
        'Content-Length': 0,
        'Accept-Ranges': 'bytes',
      });
      res.end();
    } else { // HEAD
      const h = fileHeaders(real, stats);
      h['Content-Length'] = stats.size;
      res.writeHead(200, h);
      res.end();
    }
  }

  async function serveFile(req, res, real, rel, firstStats) {
    const hot = hotPath.serve(req, res, real, rel, firstStats);
    if (hot === true || (hot !== false && await hot)) return;
    let d = decide(req, real, firstStats);
    if (d.status !== 200 && d.status !== 206) return answerWithoutBody(req, res, d, real, firstStats);
    // HEAD, and an empty file, need no open file at all.
    if (req.method === 'HEAD' || firstStats.size === 0) return answerWithoutBody(req, res, { status: 200 }, real, firstStats);

    let fd;
    try {
      fd = await open(real, 'r');
    } catch (err) {
      return sendError(req, res, errorStatus(err), { error: errorStatus(err) === 500 ? err : undefined });
    }
    let handedOver = false;
    const closeFd = () => { if (!handedOver) { handedOver = true; fs.close(fd, () => {}); } };
    try {
      if (gone(res)) return closeFd();
      const stats = await fstat(fd);
      if (!stats.isFile()) { closeFd(); return sendError(req, res, 404); }
      if (stats.size === 0) { closeFd(); return answerWithoutBody(req, res, { status: 200 }, real, stats); }
      if (stats.size !== firstStats.size || stats.mtimeMs !== firstStats.mtimeMs) {
        d = decide(req, real, stats); // changed between stat and open: decide again on what we opened
        if (d.status !== 200 && d.status !== 206) { closeFd(); return answerWithoutBody(req, res, d, real, stats); }
      }
      if (gone(res)) return closeFd();

      const ours = fileHeaders(real, stats);
      for (const name of Object.keys(ours)) res.setHeader(name, ours[name]);
      const methods = {
        lstat: async (p) => {
          if (p === real) return stats;
          throw Object.assign(new Error(`unexpected path ${p}`), { code: 'ENOENT' });
        },
        realpath: async (p) => p,
        readdir: async () => { throw Object.assign(new Error('no directories here'), { code: 'ENOTDIR' }); },
        createReadStream: (p, opts) => {
          handedOver = true;
          // Always bounded by the size we announced: a file that grows while it is sent must not
          // push bytes past Content-Length into the keep-alive connection.
          const start = opts && opts.start !== undefined ? opts.start : 0;
          const end = opts && opts.end !== undefined ? opts.end : stats.size - 1;
          const stream = fs.createReadStream(p, { fd, start, end, autoClose: true });
          stream.on('error', (err) => {
            if (!res.headersSent) sendError(req, res, errorStatus(err), { error: err });
            else res.destroy();
            stream.destroy();
          });
          const onClose = () => stream.destroy();
          res.once('close', onClose);
          stream.once('close', () => res.removeListener('close', onClose));
          if (gone(res)) stream.destroy();
          return stream;
        },
        sendError: (absolutePath, response, acceptsJSON, current, handlers, cfg, spec) =>
          sendError(req, res, (spec && spec.statusCode) || 500),
      };
      // Let our headers win over serve-handler's for this one response.
      const writeHead = res.writeHead;
      res.writeHead = function trimmedWriteHead(status, headers) {
        res.writeHead = writeHead;
        if (headers && typeof headers === 'object') {
          for (const k of ['Content-Disposition', 'Content-Type', 'Last-Modified', 'ETag']) delete headers[k];
        }
        return writeHead.apply(this, arguments);
      };
      const shReq = {
        url: encodePath('/' + rel.split(path.sep).join('/')),
        headers: d.range ? { range: `bytes=${d.range.start}-${d.range.end}` } : {},
      };
      try {
        await serveHandler(shReq, res, {
          public: realRoot, cleanUrls: false, directoryListing: false, symlinks: true, etag: false,
        }, methods);
      } finally {
        res.writeHead = writeHead;
      }
      closeFd(); // only if serve-handler never asked for the stream
    } catch (err) {
      closeFd();
      sendError(req, res, 500, { error: err });
    }
  }

  async function serveDirectory(req, res, pathname, real) {
    if (!pathname.endsWith('/')) {
      // Redirect to the URL the client sent (as SVR.JS does, so a rewritten path is not exposed)
      // plus '/', query kept. If that URL already ends in '/', serve instead of looping.
      const svr = req.svr || {};
      const href = svr.cleanHref !== undefined ? svr.cleanHref : encodePath(pathname);
      if (trailingRedirect && !href.endsWith('/')) {
        res.writeHead(301, { Location: href + '/' + (svr.cleanSearch || ''), 'Content-Length': 0 });
        res.end();
        return;
      }
      pathname += '/';
    }
    for (const name of INDEX_FILES) {
      const r = await resolvePath(pathname + name);
      if (r.stats && r.stats.isFile()) return serveFile(req, res, r.real, r.rel, r.stats);
      if (r.status === 403) return sendError(req, res, 403);
    }
    if (!listingEnabled) return sendError(req, res, 403);
    try {
      await listDirectory(req, res, pathname, real);
    } catch (err) {
      sendError(req, res, errorStatus(err), { error: errorStatus(err) === 500 ? err : undefined });
    }
  }

  // The static stage: the last one, it answers every request that reaches it; never rejects.
  async function serveStatic(req, res) {
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        if (req.method === 'OPTIONS') {
          res.writeHead(204, { Allow: ALLOW });
          res.end();
        } else {
          sendError(req, res, 405, { headers: { Allow: ALLOW } });
        }
        return;
      }
      let pathname = req.svr && req.svr.url === req.url ? req.svr.pathname : null;
      if (pathname === null) { // req.url was changed after the pipeline set it (e.g. by a script)
        const result = sanitizeTarget(req.url);
        if (!result.ok) return sendError(req, res, result.status === 400 ? 400 : 403);
        pathname = result.pathname;
      }
      const r = await resolvePath(pathname);
      if (r.status) return sendError(req, res, r.status, { error: r.status === 500 ? r.error : undefined });
      if (r.stats.isDirectory()) return await serveDirectory(req, res, pathname, r.real);
      if (!r.stats.isFile() || pathname.endsWith('/')) return sendError(req, res, 404);
      return await serveFile(req, res, r.real, r.rel, r.stats);
    } catch (err) {
      sendError(req, res, 500, { error: err });
    }
  }

  return serveStatic;
}

module.exports = { createStaticStage, contentType };
