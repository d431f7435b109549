'use strict';
// The cache's entries, as files in one directory every worker of the host shares
// (<stateDirectory>/proxy-cache): a worker stores what another one serves, and a purge by one is
// seen by all. One folder per URL (the SHA-256 of its key): `vary` lists the request headers the
// response varies on, and each variant is a file named by the SHA-256 of those headers' values:
//   [4-byte length][metadata JSON][body]
// A file is written whole under a temporary name, then renamed: a reader sees an old entry or a
// new one, never half of one. Each worker keeps the entries it served last in memory
// (memoryBytes), checked against the file's inode and mtime on every use, so a replaced or
// purged file is never served from memory.
//
// The bound on the directory is the primary's (it hears of every file stored through `index` and
// removes the oldest past maxBytes/maxEntries); a single entry never exceeds maxEntryBytes, so
// a response larger than that is passed through and never written.
//
//   createDiskStore({ directory, memoryBytes, index }) ->
//     { lookup(key, req) -> Promise<entry | null>, save(key, req, meta, body) -> Promise,
//       purge(key) -> Promise<boolean> }
//   entry: { meta, body (Buffer), file }

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');

function createDiskStore({ directory, memoryBytes, index }) {
  const memory = new Map(); // file -> { ino, mtimeMs, entry, bytes }, least recently used first
  let memoryUsed = 0;
  let counter = 0;

  const folderOf = (key) => path.join(directory, sha256(key));
  const variantOf = (names, req) => sha256(names.map((name) => `${name}:${req.headers[name] ?? ''}`).join('\n'));

  function remember(file, stat, entry) {
    const bytes = entry.body.length + 1024;
    if (bytes > memoryBytes / 4) return; // a few large entries must not push out every small one
    forget(file);
    while (memoryUsed + bytes > memoryBytes && memory.size > 0) forget(memory.keys().next().value);
    memory.set(file, { ino: stat.ino, mtimeMs: stat.mtimeMs, entry, bytes });
    memoryUsed += bytes;
  }

  function forget(file) {
    const held = memory.get(file);
    if (!held) return;
    memory.delete(file);
    memoryUsed -= held.bytes;
  }

  async function readEntry(file) {
    let stat;
    try {
      stat = await fs.promises.stat(file);
    } catch {
      forget(file);
      return null;
    }
    const held = memory.get(file);
    if (held && held.ino === stat.ino && held.mtimeMs === stat.mtimeMs) {
      memory.delete(file); // most recently used again
      memory.set(file, held);
      return held.entry;
    }
    let data;
    try {
      data = await fs.promises.readFile(file);
    } catch {
      return null;
    }
    const metaLength = data.length >= 4 ? data.readUInt32BE(0) : -1;
    if (metaLength < 0 || 4 + metaLength > data.length) return null;
    let meta;
    try {
      meta = JSON.parse(data.subarray(4, 4 + metaLength).toString('utf8'));
    } catch {
      return null;
    }
    const entry = { meta, body: data.subarray(4 + metaLength), file };
    remember(file, stat, entry);
    return entry;
  }

  async function lookup(key, req) {
    const folder = folderOf(key);
    let names = [];
    try {
      names = JSON.parse(await fs.promises.readFile(path.join(folder, 'vary'), 'utf8'));
    } catch {
      // no vary list: the URL was never stored, or its response varies on nothing
    }
    const entry = await readEntry(path.join(folder, variantOf(names, req)));
    return entry && entry.meta.key === key ? entry : null;
  }

  async function writeAtomically(file, data) {
    const temporary = `${file}.${process.pid}.${++counter}.tmp`;
    await fs.promises.writeFile(temporary, data);
    await fs.promises.rename(temporary, file);
  }

  async function save(key, req, meta, body) {
    const folder = folderOf(key);
    const names = meta.vary;
    await fs.promises.mkdir(folder, { recursive: true });
    await writeAtomically(path.join(folder, 'vary'), JSON.stringify(names));
    const metaBytes = Buffer.from(JSON.stringify({ ...meta, key }));
    const head = Buffer.alloc(4);
    head.writeUInt32BE(metaBytes.length, 0);
    const file = path.join(folder, variantOf(names, req));
    await writeAtomically(file, Buffer.concat([head, metaBytes, body]));
    index.stored(file, 4 + metaBytes.length + body.length);
  }

  async function purge(key) {
    const folder = folderOf(key);
    const existed = fs.existsSync(folder);
    await fs.promises.rm(folder, { recursive: true, force: true });
    for (const file of [...memory.keys()]) if (file.startsWith(folder + path.sep)) forget(file);
    index.removed(folder);
    return existed;
  }

  return { lookup, save, purge };
}

module.exports = { createDiskStore };
