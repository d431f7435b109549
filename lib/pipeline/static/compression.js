'use strict';
// Content coding for static files: which responses may be compressed, which coding a
// client accepts, and the compressors. No HTTP plumbing here; respond.js applies it.
//
//   createCompression(config) -> null when enableCompression is false, else {
//     negotiate(acceptEncoding) -> 'br' | 'gzip' | null (identity)
//     isCompressible(contentType, urlPath, size) -> boolean
//     compress(buffer, coding) -> Promise<Buffer>      (thread pool; for results that get cached)
//     reserveStream(size) -> boolean                    (under the size and concurrency caps: a slot
//                                                        taken, to be given to createStream or released)
//     createStream(coding) -> zlib Transform            (for files too large to cache; takes over the
//                                                        slot reserveStream took, gives it back on close)
//     releaseStream()                                   (a slot reserved for a response that never
//                                                        started its compressor)
//     SIBLING_EXT: { br: '.br', gzip: '.gz' }           (precompressed files next to the original)
//   }
// Everything configurable is compiled here, once per worker.

const { compileRegexString } = require('../../config/regex-string');
// zlib is required at the first compressed answer: a worker that never compresses (compression
// off, or only images and small files asked for) does without it.
let zlibModule = null;
const zlib = () => zlibModule || (zlibModule = require('zlib'));
const { mediaType } = require('../../http/headers');

// Below this many bytes compression saves too little to pay for its headers and CPU (Caddy: 512).
const MIN_SIZE = 512;

// Quality: results of hot files are cached, so they are compressed once; but an attacker can make a
// worker compress every text file once, so keep it moderate. (Precompress with -11/-9 for the best.)
const BROTLI_QUALITY = 5;
const GZIP_LEVEL = 6;
const BROTLI_STREAM_QUALITY = 4; // files too large to cache are compressed on every request
// Memory of one on-the-fly compressor (~12 MiB per brotli stream with
// the file's size as a hint, kept by the allocator afterwards). A 256 KiB brotli window and no size
// hint keep it near 1 MiB; gzip's defaults (32 KiB window, memLevel 8) are ~256 KiB already.
const BROTLI_STREAM_WINDOW_BITS = 18;

const CODINGS = ['br', 'gzip']; // in order of preference when the client's q-values tie
const SIBLING_EXT = { br: '.br', gzip: '.gz' };

// Text-like types: text/*, JSON, JavaScript, XML and their +json/+xml kin, SVG, WebAssembly,
// uncompressed fonts and icons. Images, audio, video, archives and woff/woff2 are already compressed.
const COMPRESSIBLE_TYPES = new Set([
  'application/javascript', 'application/x-javascript', 'application/ecmascript', 'application/json',
  'application/xml', 'application/wasm', 'application/graphql', 'application/x-sh',
  'application/x-httpd-php', 'application/vnd.ms-fontobject', 'application/x-font-ttf',
  'application/x-font-otf', 'application/x-web-app-manifest+json', 'application/rtf',
  'application/x-tar', 'application/postscript', 'application/x-ndjson', 'application/toml',
  'application/yaml', 'application/x-yaml', 'application/sql', 'application/csv',
  'font/ttf', 'font/otf', 'font/collection', 'image/bmp', 'image/x-icon', 'image/vnd.microsoft.icon',
  'image/x-ms-bmp',
]);
const NEVER = /^(?:image|audio|video)\/|^application\/(?:zip|gzip|x-gzip|x-bzip2?|x-xz|zstd|x-7z-compressed|x-rar-compressed|vnd\.rar|octet-stream|pdf)$|^font\/woff2?$/;


function isCompressibleType(contentType) {
  const type = mediaType(contentType);
  if (type === '') return false;
  if (COMPRESSIBLE_TYPES.has(type)) return true;
  if (type.endsWith('+json') || type.endsWith('+xml') || type.endsWith('+text')) return true; // incl. image/svg+xml
  if (NEVER.test(type)) return false;
  return type.startsWith('text/') && type !== 'text/event-stream';
}

// Accept-Encoding -> the coding to use, or null for identity (RFC 9110 §12.5.3).
// "br;q=0" refuses br; "*" stands for every coding not named; an explicit "identity" with a
// higher q-value than the best coding wins; ties between codings go to br. An identity that is
// refused while no coding is acceptable still gets identity (the usual practice; no 406).
function negotiate(header) {
  if (typeof header !== 'string' || header === '') return null;
  let br = -1;
  let gzip = -1;
  let identity = -1;
  let star = -1;
  const parts = header.split(',');
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    const semi = part.indexOf(';');
    const name = (semi === -1 ? part : part.slice(0, semi)).trim().toLowerCase();
    const q = semi === -1 ? 1 : qValue(part.slice(semi + 1));
    if (name === 'br') br = Math.max(br, q);
    else if (name === 'gzip' || name === 'x-gzip') gzip = Math.max(gzip, q);
    else if (name === 'identity') identity = Math.max(identity, q);
    else if (name === '*') star = Math.max(star, q);
  }
  if (br === -1) br = star === -1 ? 0 : star;
  if (gzip === -1) gzip = star === -1 ? 0 : star;
  const best = br >= gzip ? br : gzip;
  if (best <= 0) return null;
  if (identity > best) return null;
  return br >= gzip ? 'br' : 'gzip';
}

// The q parameter of one Accept-Encoding element: a number from 0 to 1, default 1; junk -> 0.
function qValue(params) {
  const items = params.split(';');
  for (let i = 0; i < items.length; i++) {
    const eq = items[i].indexOf('=');
    if (eq === -1) continue;
    if (items[i].slice(0, eq).trim().toLowerCase() !== 'q') continue;
    const value = items[i].slice(eq + 1).trim();
    if (!/^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(value)) return 0;
    return Number(value);
  }
  return 1;
}

function brotliOptions(quality, size) {
  const { constants } = zlib();
  const params = { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT };
  if (size > 0) params[constants.BROTLI_PARAM_SIZE_HINT] = size;
  return { params };
}

function compress(buffer, coding) {
  return new Promise((resolve, reject) => {
    const done = (err, out) => (err ? reject(err) : resolve(out));
    if (coding === 'br') zlib().brotliCompress(buffer, brotliOptions(BROTLI_QUALITY, buffer.length), done);
    else zlib().gzip(buffer, { level: GZIP_LEVEL }, done);
  });
}

function createStream(coding) {
  if (coding !== 'br') return zlib().createGzip({ level: GZIP_LEVEL });
  const options = brotliOptions(BROTLI_STREAM_QUALITY, 0);
  options.params[zlib().constants.BROTLI_PARAM_LGWIN] = BROTLI_STREAM_WINDOW_BITS;
  return zlib().createBrotliCompress(options);
}

// The caps on compressing as a file streams: per worker, at most maxStreams at once (the rest are
// sent as they are), and never for files above maxFileSize (their CPU cost per request).
// A slot is taken when the response is decided, not when its compressor starts: between the two
// lie the file's open and stat, and a burst of requests decided meanwhile all got a compressed
// answer (20 at once: 20 compressors under a cap of 16). The responder gives the slot to the
// compressor (createStream), or back (releaseStream) on every path that never starts one.
function createStreamLimits(config) {
  const maxStreams = Number.isInteger(config.compressionMaxStreams) ? config.compressionMaxStreams : 16;
  const maxFileSize = Number.isInteger(config.compressionMaxFileSize) ? config.compressionMaxFileSize : 8388608;
  let reserved = 0; // slots taken: compressors running, and responses decided whose compressor is to start
  const releaseStream = () => { reserved--; };
  return {
    reserveStream(size) {
      if (size > maxFileSize || reserved >= maxStreams) return false;
      reserved++;
      return true;
    },
    releaseStream,
    createStream(coding) {
      const transform = createStream(coding);
      transform.once('close', releaseStream);
      return transform;
    },
  };
}

function createCompression(config) {
  if (!config.enableCompression) return null;
  const dontCompress = (config.dontCompress || []).map((text) => compileRegexString(text));
  function isCompressible(contentType, urlPath, size) {
    if (size < MIN_SIZE || !isCompressibleType(contentType)) return false;
    for (let i = 0; i < dontCompress.length; i++) {
      dontCompress[i].lastIndex = 0; // a /g or /y pattern must not carry state between requests
      if (dontCompress[i].test(urlPath)) return false;
    }
    return true;
  }
  const { reserveStream, releaseStream, createStream: createLimitedStream } = createStreamLimits(config);
  return { negotiate, isCompressible, compress, createStream: createLimitedStream, reserveStream, releaseStream, SIBLING_EXT };
}

module.exports = { createCompression, negotiate, isCompressibleType, SIBLING_EXT, MIN_SIZE, BROTLI_QUALITY, GZIP_LEVEL, BROTLI_STREAM_QUALITY };
