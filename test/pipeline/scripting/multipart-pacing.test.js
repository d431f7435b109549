'use strict';
// How a worker paces multipart uploads so that other requests keep being answered, checked by
// counting, not by timing: a file part's open, write and close run on libuv's 4-thread pool, which
// static files use too, and busboy handles a whole received chunk (hundreds of parts) at once.
// 4 bodies of 1,000 parts once queued some 12,000 pool operations and parsed 64 KiB chunks in one
// go: static requests waited seconds. Now at most MULTIPART_WRITES_AT_ONCE (2) parts are written
// or removed at once, and the worker's parsers are fed PARSE_SLICE_BYTES (8 KiB) per turn of the
// event loop in all.
// These run in this process, against the module, with fs and busboy observed.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { waitUntil } = require('../../support/helpers');

// Observe every parser post-data.js makes: it loads busboy from the same node_modules.
const realBusboy = require('busboy');
const parserWrites = [];
let turn = 0; // counts the event loop's turns while a test watches them
let nextParserThrows = false; // the next parser made throws on its second write
require.cache[require.resolve('busboy')].exports = function observedBusboy(options) {
  const parser = realBusboy(options);
  const write = parser.write.bind(parser);
  const throws = nextParserThrows;
  nextParserThrows = false;
  let writes = 0;
  parser.write = (chunk, ...rest) => {
    parserWrites.push({ bytes: chunk.length, turn });
    if (throws && ++writes === 2) throw new Error('a parser fault');
    return write(chunk, ...rest);
  };
  return parser;
};
const { postInMemory } = require('../../support/post-data-request');

const BOUNDARY = 'bOuNdArY42';
function multipart(fileCount) {
  const parts = [];
  for (let i = 0; i < fileCount; i++) {
    parts.push(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="f${i}"; filename="f${i}.txt"\r\nContent-Type: text/plain\r\n\r\nx\r\n`);
  }
  parts.push(`--${BOUNDARY}--\r\n`);
  return Buffer.from(parts.join(''));
}

const post = (body, tempDir) => postInMemory(body, { contentType: `multipart/form-data; boundary=${BOUNDARY}`, tempDir });

const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-test-pacing-'));
test.after(() => fs.rmSync(tempDir, { recursive: true, force: true }));

// Counts the file operations post-data.js has on the thread pool at once: a write stream from its
// creation to its 'close', an unlink until its callback.
function watchFileOperations(t) {
  const counts = { now: 0, most: 0, writes: 0, unlinks: 0 };
  const begin = () => { counts.now++; counts.most = Math.max(counts.most, counts.now); };
  const end = () => { counts.now--; };
  const { createWriteStream, unlink } = fs;
  t.mock.method(fs, 'createWriteStream', (...args) => {
    counts.writes++;
    begin();
    const stream = createWriteStream(...args);
    stream.once('close', end);
    return stream;
  });
  t.mock.method(fs, 'unlink', (file, callback) => {
    counts.unlinks++;
    begin();
    unlink(file, (error) => { end(); callback(error); });
  });
  return counts;
}

test('4 bodies of 1,000 file parts at once: never more than 2 file operations on the thread pool, every part saved and removed', async (t) => {
  const counts = watchFileOperations(t);
  const posts = Array.from({ length: 4 }, () => post(multipart(1000), tempDir));
  const results = await Promise.all(posts.map((p) => p.parsed));
  const saved = results.flatMap(({ files }) => Object.values(files).flat());
  assert.equal(saved.length, 4000);
  assert.ok(saved.every((file) => fs.readFileSync(file.filepath, 'utf8') === 'x'), 'each part on disk, whole');
  for (const p of posts) p.res.emit('close'); // the responses are done: their files go
  assert.ok(await waitUntil(() => counts.unlinks === 4000 && counts.now === 0, 30000), `${counts.unlinks} parts removed`);
  assert.equal(counts.writes, 4000);
  assert.equal(counts.most, 2, `${counts.most} file operations at once`);
  assert.deepEqual(fs.readdirSync(tempDir), [], 'every part removed');
});

test('4 bodies of 100 KiB, each in one chunk, reach their parsers 8 KiB per turn of the event loop in all', async () => {
  const body = multipart(1000); // ~100 KiB, delivered as one chunk
  parserWrites.length = 0;
  let watching = true;
  const countTurns = () => {
    turn++;
    if (watching) setImmediate(countTurns);
  };
  countTurns();
  const posts = Array.from({ length: 4 }, () => post(body, tempDir));
  try {
    const results = await Promise.all(posts.map((p) => p.parsed));
    assert.deepEqual(results.map(({ files }) => Object.keys(files).length), [1000, 1000, 1000, 1000]);
  } finally {
    watching = false;
    for (const p of posts) p.res.emit('close');
  }
  const bytes = parserWrites.reduce((sum, write) => sum + write.bytes, 0);
  assert.equal(bytes, 4 * body.length, 'every body was parsed whole');
  const perTurn = new Map();
  for (const write of parserWrites) perTurn.set(write.turn, (perTurn.get(write.turn) || 0) + write.bytes);
  const most = Math.max(...perTurn.values());
  assert.ok(most <= 8 * 1024, `${most} bytes parsed in one turn of the event loop`);
  assert.ok(perTurn.size >= Math.ceil((4 * body.length) / (8 * 1024)), `parsed over ${perTurn.size} turns`);
});

test('a body whose parser throws fails alone, with a 500; the bodies fed beside it are parsed whole', async () => {
  const body = multipart(1000); // ~100 KiB: a dozen slices each, the four bodies taking turns
  const posts = [post(body, tempDir)];
  nextParserThrows = true;
  posts.push(post(body, tempDir));
  posts.push(post(body, tempDir), post(body, tempDir));
  try {
    const outcomes = await Promise.allSettled(posts.map((p) => p.parsed));
    assert.equal(outcomes[1].status, 'rejected');
    assert.equal(outcomes[1].reason.status, 500, outcomes[1].reason.message);
    for (const i of [0, 2, 3]) {
      assert.equal(outcomes[i].status, 'fulfilled', `body ${i}: ${outcomes[i].reason?.message}`);
      assert.equal(Object.keys(outcomes[i].value.files).length, 1000);
    }
  } finally {
    for (const p of posts) p.res.emit('close');
  }
  assert.ok(await waitUntil(() => fs.readdirSync(tempDir).length === 0, 30000), `${fs.readdirSync(tempDir).length} parts left in the temporary directory`);
});

test('file parts are named by one random prefix per body and a number: 1,000 parts cost one crypto.randomBytes', async (t) => {
  const randomBytes = t.mock.method(crypto, 'randomBytes');
  const posts = [post(multipart(1000), tempDir), post(multipart(1000), tempDir)];
  try {
    const results = await Promise.all(posts.map((p) => p.parsed));
    assert.equal(randomBytes.mock.callCount(), 2, 'one call per body');
    const names = results.map(({ files }) => Object.values(files).flat().map((file) => file.newFilename));
    for (const bodyNames of names) {
      assert.ok(bodyNames.every((name) => /^svr-upload-[0-9a-f]{24}-\d+$/.test(name)), bodyNames[0]);
      assert.equal(new Set(bodyNames).size, 1000, 'distinct within a body');
    }
    const prefix = (name) => name.slice(0, name.lastIndexOf('-'));
    assert.notEqual(prefix(names[0][0]), prefix(names[1][0]), 'each body its own random prefix');
  } finally {
    for (const p of posts) p.res.emit('close');
  }
  assert.ok(await waitUntil(() => fs.readdirSync(tempDir).length === 0, 30000), 'every part removed');
});
