'use strict';
// The cache's entries, as files in one directory every worker of the host shares
// (<stateDirectory>/proxy-cache): a worker stores what another one serves, and a purge by one is
// seen by all. One folder per URL (the SHA-256 of its key): `vary` lists the request headers the
// response varies on, and each variant is a file named by the SHA-256 of those headers' values:
//   [4-byte length][metadata JSON][body]
// A file is written whole under a temporary name, then renamed: a reader sees an old entry or a
// new one, never half of one. Each worker keeps the entries it served last in memory
// (memoryBytes) and answers a fresh one from there without touching the disk; a purge or an
// eviction anywhere reaches every worker's memory through the primary (forget()) before the
// PURGE is answered. An entry another worker replaced is still a fresh answer until it expires;
// then the disk's newer copy is read.
//
// The bound on the directory is the primary's (it hears of every file stored through `index` and
// removes the oldest past maxBytes/maxEntries); a single entry never exceeds maxEntryBytes, so
// a response larger than that is passed through and never written.
//
//   createDiskStore({ directory, memoryBytes, index }) ->
//     { lookupMemory(key, req) -> entry | null, lookup(key, req) -> Promise<entry | null>,
//       save(key, req, meta, body) -> Promise, purge(key) -> Promise<boolean>,
//       forget(path) (a folder or a file: dropped from memory), folderOf(key) }
//   entry: { meta, body (Buffer), file }

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');

function createDiskStore({ directory, memoryBytes, index }) {
  const memory = new Map(); // file -> { ino, mtimeMs, entry, bytes }, least recently used first
  const varyOf = new Map(); // folder -> the header names its responses vary on, as last read
  let memoryUsed = 0;
  let counter = 0;

  // A hash per lookup is most of a hit's cost: the folders of the keys seen last are kept.
  const folders = new Map();
  const folderOf = (key) => {
    let folder = folders.get(key);
    if (folder === undefined) {
      if (folders.size >= 10000) folders.delete(folders.keys().next().value);
      folder = path.join(directory, sha256(key));
      folders.set(key, folder);
    }
    return folder;
  };
  const NO_VARY = sha256('');
  const variantOf = (names, req) => (names.length === 0 ? NO_VARY : sha256(names.map((name) => `${name}:${req.headers[name] ?? ''}`).join('\n')));
  const fileOf = (folder, names, req) => (names.length === 0 ? `${folder}${path.sep}${NO_VARY}` : path.join(folder, variantOf(names, req)));

  function remember(file, stat, entry) {
    const bytes = entry.body.length + 1024;
    if (bytes > memoryBytes / 4) return; // a few large entries must not push out every small one
    forgetFile(file);
    while (memoryUsed + bytes > memoryBytes && memory.size > 0) forgetFile(memory.keys().next().value);
    memory.set(file, { ino: stat.ino, mtimeMs: stat.mtimeMs, entry, bytes });
    memoryUsed += bytes;
  }

  function forgetFile(file) {
    const held = memory.get(file);
    if (!held) return;
    memory.delete(file);
    memoryUsed -= held.bytes;
  }

  // target: a URL's folder (a purge: every variant goes) or one file (an eviction).
  function forget(target) {
    if (path.dirname(target) !== directory) return forgetFile(target);
    varyOf.delete(target);
    for (const file of [...memory.keys()]) if (file.startsWith(target + path.sep)) forgetFile(file);
    return undefined;
  }

  function rememberVary(folder, names) {
    if (!varyOf.has(folder) && varyOf.size >= 100000) varyOf.delete(varyOf.keys().next().value);
    varyOf.set(folder, names);
  }

  // A fresh answer without the disk: the entry this worker last read or stored for the request.
  function lookupMemory(key, req) {
    const folder = folderOf(key);
    const names = varyOf.get(folder);
    if (names === undefined) return null;
    const held = memory.get(fileOf(folder, names, req));
    if (held === undefined || held.entry.meta.key !== key) return null;
    memory.delete(held.entry.file); // most recently used again
    memory.set(held.entry.file, held);
    return held.entry;
  }

  async function readEntry(file) {
    let stat;
    try {
      stat = await fs.promises.stat(file);
    } catch {
      forgetFile(file);
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
      return null; // never stored (or purged)
    }
    rememberVary(folder, names);
    const entry = await readEntry(fileOf(folder, names, req));
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
    const file = fileOf(folder, names, req);
    await writeAtomically(file, Buffer.concat([head, metaBytes, body]));
    index.stored(file, 4 + metaBytes.length + body.length);
    rememberVary(folder, names);
    remember(file, await fs.promises.stat(file), { meta: { ...meta, key }, body, file });
  }

  // Resolves once every worker has dropped the folder from memory too (the primary says so).
  async function purge(key) {
    const folder = folderOf(key);
    const existed = fs.existsSync(folder);
    await fs.promises.rm(folder, { recursive: true, force: true });
    forget(folder);
    await index.removed(folder);
    return existed;
  }

  return { lookupMemory, lookup, save, purge, forget, folderOf };
}

module.exports = { createDiskStore };
