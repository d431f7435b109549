'use strict';
// What a worker remembers about hot static files, and never wrongly.
//
//   new FileCache({ maxBytes, maxFileSize, settleMs, now })
//   cache.entry(real, stats) -> the entry for exactly this version of the file (a fresh one if the
//                               file changed since it was last seen)
//   cache.kept(entry)        -> Buffer|undefined: the content, if it can be used without a read
//   cache.content(entry)     -> Promise<Buffer|null>: the whole file, read once and kept; null when the
//                               file changed while it was read (the caller falls back to streaming)
//   cache.get(entry, key) / cache.put(entry, key, value, bytes): other per-version data (compressed
//                               variants, precomputed headers), charged to the same byte budget
//
// Revalidation: the caller stats the file for every request (one synchronous stat, no thread-pool
// hop, shared by the requests of one event-loop turn: path-policy.js) and an entry is only used
// while that stat matches the one seen when the entry was made: same device, inode, size, mtime
// and ctime. So a file that was changed (even to the same size), grown, replaced by a rename (new
// inode) or deleted (the stat fails) is seen by the next request handled after that turn.
// ctime matters: `cp -p`/`rsync -t`/`touch -d` restore an old mtime, but the kernel always sets ctime.
//
// Timestamps have a granularity (a kernel tick on Linux, 1 or 2 s on some file systems), so two
// writes close together can leave identical stats. Content read less than `settleMs` after the file
// last changed is therefore not trusted ("racily clean", as git calls it): the next request reads it
// again (and gets the same Buffer if the bytes are the same); a read after the file settled is kept.
//
// Memory: one LRU (Map insertion order) bounded by bytes: content, compressed variants and a fixed
// charge per entry. A file larger than maxFileSize is never read into memory.

const fs = require('fs');

const ENTRY_OVERHEAD = 1024; // bytes charged per entry: stats, headers, bookkeeping
const DEFAULT_SETTLE_MS = 2000;

function sameFile(a, b) {
  return a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs &&
    a.ctimeMs === b.ctimeMs && a.dev === b.dev;
}

class FileCache {
  constructor({ maxBytes = 32 * 1024 * 1024, maxFileSize = 1024 * 1024, settleMs = DEFAULT_SETTLE_MS, now = Date.now, readFile } = {}) {
    this.maxBytes = maxBytes;
    this.maxFileSize = Math.min(maxFileSize, maxBytes);
    this.settleMs = settleMs;
    this.now = now;
    this.readFile = readFile || readWhole;
    this.map = new Map(); // real path -> entry, least recently used first
    this.bytes = 0;
  }

  entry(real, stats) {
    let e = this.map.get(real);
    if (e !== undefined) {
      if (sameFile(e.stats, stats)) {
        if (e.real !== this.lastTouched) { // move to the most recently used end
          this.map.delete(real);
          this.map.set(real, e);
          this.lastTouched = real;
        }
        return e;
      }
      this.remove(e);
    }
    e = { real, stats, bytes: ENTRY_OVERHEAD + 2 * real.length, data: new Map(), reading: null, live: true, trusted: false };
    if (this.maxBytes > 0) {
      this.map.set(real, e);
      this.lastTouched = real;
      this.bytes += e.bytes;
      this.trim();
    } else {
      e.live = false;
    }
    return e;
  }

  // Whether a file of this size is ever held in memory.
  fits(size) {
    return size <= this.maxFileSize;
  }

  // Content read at `startedAt` may be kept only if the file had settled by then.
  settled(stats, startedAt) {
    return startedAt - this.settleMs > stats.ctimeMs;
  }

  get(e, key) {
    return e.data.get(key);
  }

  put(e, key, value, bytes) {
    if (!e.live) return;
    const old = e.data.get(key);
    if (old !== undefined) this.charge(e, -old.bytes);
    e.data.set(key, { value, bytes });
    this.charge(e, bytes);
    this.trim();
  }

  charge(e, bytes) {
    e.bytes += bytes;
    this.bytes += bytes;
  }

  remove(e) {
    if (!e.live) return;
    e.live = false;
    this.map.delete(e.real);
    this.bytes -= e.bytes;
    if (this.lastTouched === e.real) this.lastTouched = undefined;
  }

  trim() {
    if (this.bytes <= this.maxBytes) return;
    for (const e of this.map.values()) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(e);
    }
  }

  // The content of this version of the file when it can be used without reading the file again:
  // read after the file had settled. (An unsettled copy is kept too, but only to be compared with.)
  kept(e) {
    if (!e.trusted) return undefined;
    const kept = e.data.get('content');
    return kept === undefined ? undefined : kept.value;
  }

  // The file's content for this entry's version. Concurrent callers share one read. A file that has
  // not settled is read on every call; when it reads the same as last time the same Buffer is
  // returned, so that what was derived from it (a compressed form) can be reused.
  content(e) {
    const kept = this.kept(e);
    if (kept !== undefined) return Promise.resolve(kept);
    if (e.reading) return e.reading;
    const startedAt = this.now();
    e.reading = this.readFile(e.real).then((read) => {
      e.reading = null;
      if (read === null || !sameFile(read.stats, e.stats) || read.data.length !== e.stats.size) {
        this.remove(e); // it changed while we read: the caller streams what it opens instead
        return null;
      }
      const previous = e.data.get('content');
      const data = previous !== undefined && previous.value.equals(read.data) ? previous.value : read.data;
      this.put(e, 'content', data, data.length);
      e.trusted = this.settled(e.stats, startedAt);
      return data;
    }, (err) => {
      e.reading = null;
      this.remove(e);
      throw err;
    });
    return e.reading;
  }

  // The same for a precompressed sibling (path, its stats): kept under `key` in the entry.
  siblingContent(e, key, path, stats) {
    const kept = e.data.get(key);
    if (kept !== undefined && sameFile(kept.value.stats, stats)) return Promise.resolve(kept.value.data);
    const startedAt = this.now();
    return this.readFile(path).then((read) => {
      if (read === null || !sameFile(read.stats, stats) || read.data.length !== stats.size) return null;
      if (this.settled(stats, startedAt)) this.put(e, key, read, read.data.length);
      return read.data;
    });
  }
}

// The callback forms of fs, as promises: fs.promises would load its FileHandle machinery (with
// readline and the watchers) into every worker at its first request.
const { promisify } = require('util');
const open = promisify(fs.open);
const fstat = promisify(fs.fstat);
const read = promisify(fs.read);
const close = promisify(fs.close);

// Reads a whole file through one descriptor and reports the stats of what was read. webRoot
// (site.webRoot): open with its flags and read only a descriptor that is really at `path`.
async function readWhole(path, webRoot) {
  const fd = await open(path, webRoot ? webRoot.flags : 'r');
  try {
    if (webRoot && !webRoot.isAt(fd, path)) return null;
    const before = await fstat(fd);
    if (!before.isFile()) return null;
    const data = Buffer.allocUnsafeSlow(before.size); // not a slice of a shared pool: kept for long
    let offset = 0;
    while (offset < data.length) {
      const { bytesRead } = await read(fd, data, offset, data.length - offset, offset);
      if (bytesRead === 0) return null; // shrank while we read
      offset += bytesRead;
    }
    const stats = await fstat(fd);
    return { data, stats };
  } finally {
    await close(fd);
  }
}

module.exports = { FileCache, sameFile, readWhole, ENTRY_OVERHEAD, DEFAULT_SETTLE_MS };
