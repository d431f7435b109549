'use strict';
// Built-in bounds and settings that are constants, not config keys, with the values
// docs/security.md, docs/limits.md, docs/serving.md and docs/limits-and-caching.md give for them. The tests of each bound use the constant by name, so they would
// pass whatever its value: a change of value must fail here, and come with a change of the docs.

const test = require('node:test');
const assert = require('node:assert/strict');

const KiB = 1024;
const MiB = 1024 * KiB;

const DOCUMENTED = [
  ['lib/net/summarised-log.js', 'REFUSAL_LOG_INTERVAL_MS', 10000, 'PROXY protocol refusals summed up every 10 s'],
  ['lib/pipeline/scripting/legacy-archive.js', 'MAX_EXPANDED_BYTES', 272 * MiB, 'a .tar.gz mod expanding past 272 MiB is refused'],
  ['lib/pipeline/static/listing-pages.js', 'RENDERS_AT_ONCE', 2, '2 listing renders at once per worker'],
  ['lib/pipeline/static/listing-pages.js', 'RENDERS_WAITING', 16, '16 listing renders waiting'],
  ['lib/pipeline/static/listing-pages.js', 'FRESH_MS', 1000, 'a rendered listing shared for 1 s'],
  ['lib/process/orphan-reaper.js', 'ORPHAN_GRACE_MS', 2500, 'a worker dies 2.5 s after its primary'],
  ['lib/pipeline/static/http2-body.js', 'SLICE_BYTES', 16 * KiB, 'HTTP/2 file bodies in 16 KiB slices'],
  ['lib/net/http2-send-timeout.js', 'PIECE_BYTES', 64 * KiB, 'an HTTP/2 stream handed to Node 64 KiB at most at a time'],
  ['lib/pipeline/scripting/post-data.js', 'MULTIPART_WRITES_AT_ONCE', 2, 'multipart uploads hold 2 of libuv\'s threads per worker'],
  ['lib/pipeline/scripting/post-data.js', 'PARSE_SLICE_BYTES', 8 * KiB, 'multipart parsed in 8 KiB slices'],
  ['lib/pipeline/static/listing.js', 'MAX_ENTRIES', 10000, 'at most 10,000 entries examined per listing'],
  ['lib/pipeline/static/compression.js', 'MIN_SIZE', 512, 'files of at least 512 bytes are compressed'],
  ['lib/pipeline/static/compression.js', 'BROTLI_QUALITY', 5, 'on the fly: brotli quality 5'],
  ['lib/pipeline/static/compression.js', 'GZIP_LEVEL', 6, 'on the fly: gzip level 6'],
  ['lib/pipeline/static/compression.js', 'BROTLI_STREAM_QUALITY', 4, 'streamed large files: brotli quality 4'],
  ['lib/pipeline/static/file-cache.js', 'ENTRY_OVERHEAD', 1 * KiB, 'each cached file also counts about 1 KiB'],
  ['lib/pipeline/static/file-cache.js', 'DEFAULT_SETTLE_MS', 2000, 'a file is read again until unchanged for 2 s'],
  ['lib/process/proxy-cache-index.js', 'LOCK_MS', 5000, 'concurrent misses wait for the first up to 5 s'],
  ['lib/pipeline/cache/index.js', 'MAX_UNCACHEABLE_KEYS', 10000, 'a worker remembers up to 10,000 hit-for-miss URLs'],
];

for (const [file, name, value, what] of DOCUMENTED) {
  test(`${name} (${file}) is ${value}: ${what}`, () => {
    assert.equal(require(`../../${file}`)[name], value);
  });
}
