'use strict';
// Unpacks a legacy (SVR.JS 3.x) `.tar.gz` mod so that it can be required.
//
//   extractModArchive(file, intoDir[, limits]) -> intoDir   (throws an Error saying what is wrong)
//
// The archive is read twice with the `tar` package (npm, by the author of npm's own tar handling:
// gzip, pax and GNU headers, long names; a hand-written reader would get those wrong). The first
// pass only lists it and refuses, before anything is written:
//   - an entry that is not a regular file or a directory (symbolic and hard links, devices, FIFOs);
//   - a name that is absolute, has a ".." segment or a backslash or NUL, or is empty;
//   - more than MAX_ENTRIES entries, or more than MAX_TOTAL_BYTES of file contents.
// The second pass extracts (strict: any warning is an error) into intoDir, which is created empty.
// Then every extracted path is checked with lstat: a regular file or directory whose real path is
// inside intoDir. svr also refuses an archive file larger than MAX_ARCHIVE_BYTES before reading it.
//
// Both passes read a plain tar that svr has decompressed first, stopping at MAX_EXPANDED_BYTES:
// `tar`'s own gunzip took 45 s and 300 MB to give up on a 51 KB archive holding 50 MB of zeros
// after the end of the tar (its time grows faster than the output), where zlib's takes well under
// a second to inflate, or to refuse, the whole limit.

const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
// Required on the first archive only: most servers have no .tar.gz mod, and `tar` costs every
// worker (and the primary's mod-keys check) ~10 ms of start-up and a few MiB of memory.
let tarModule = null;
function tar() {
  tarModule ??= require('tar');
  return tarModule;
}

const MAX_ARCHIVE_BYTES = 64 * 1024 * 1024; // the .tar.gz file itself
const MAX_TOTAL_BYTES = 256 * 1024 * 1024; // all files, unpacked
const MAX_ENTRIES = 10000;
// The tar stream itself: the contents plus headers, padding and whatever follows the end blocks.
const MAX_EXPANDED_BYTES = MAX_TOTAL_BYTES + 16 * 1024 * 1024;
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);

const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);

// Why `name` may not be written under the extraction directory, or null when it may.
function unsafeName(name) {
  if (typeof name !== 'string' || name === '' || name === './') return 'an empty name';
  if (name.includes('\0') || name.includes('\\')) return 'a NUL or backslash in the name';
  if (path.posix.isAbsolute(name) || /^[A-Za-z]:/.test(name)) return 'an absolute path';
  if (name.split('/').includes('..')) return 'a ".." segment (it would escape the mod\'s directory)';
  return null;
}

function listEntries(file, limits) {
  const problems = [];
  let entries = 0;
  let total = 0;
  tar().t({
    file,
    sync: true,
    strict: true,
    onReadEntry(entry) {
      entries++;
      const name = entry.path;
      if (!ALLOWED_TYPES.has(entry.type)) {
        problems.push(`"${name}" is a ${entry.type}${entry.linkpath ? ` to "${entry.linkpath}"` : ''}: only files and directories are allowed`);
      } else {
        const why = unsafeName(name);
        if (why) problems.push(`"${name}" has ${why}`);
      }
      total += entry.size || 0;
      entry.resume();
    },
  });
  if (entries > limits.entries) problems.push(`${entries} entries, more than the ${limits.entries} allowed`);
  if (total > limits.totalBytes) problems.push(`${total} bytes unpacked, more than the ${limits.totalBytes} allowed`);
  if (entries === 0) problems.push('the archive is empty');
  return problems;
}

// Every path under dir is a regular file or a directory, really inside dir.
function verifyTree(dir) {
  const real = fs.realpathSync(dir);
  const walk = (current) => {
    for (const name of fs.readdirSync(current)) {
      const full = path.join(current, name);
      const stats = fs.lstatSync(full);
      if (!stats.isFile() && !stats.isDirectory()) throw new Error(`"${path.relative(dir, full)}" was extracted as something other than a file or directory`);
      const resolved = fs.realpathSync(full);
      if (!resolved.startsWith(real + path.sep)) throw new Error(`"${path.relative(dir, full)}" was extracted outside the mod's directory`);
      if (stats.isDirectory()) walk(full);
    }
  };
  walk(dir);
}

// The archive as a plain tar, decompressed into `tarFile` (a gzip stream that inflates past
// expandedBytes is refused); an archive that is not gzipped is read as it is.
function decompress(file, tarFile, expandedBytes) {
  const packed = fs.readFileSync(file);
  if (!packed.subarray(0, 2).equals(GZIP_MAGIC)) return file;
  let plain;
  try {
    plain = zlib.gunzipSync(packed, { maxOutputLength: expandedBytes });
  } catch (error) {
    if (error.code === 'ERR_BUFFER_TOO_LARGE') throw new Error(`the archive expands to more than ${expandedBytes} bytes: too large`);
    throw new Error(`not a readable .tar.gz archive (${error.message})`);
  }
  fs.writeFileSync(tarFile, plain, { mode: 0o600 });
  return tarFile;
}

// limits: the defaults above; tests pass smaller ones.
function extractModArchive(file, intoDir, limits = {}) {
  const { archiveBytes = MAX_ARCHIVE_BYTES, totalBytes = MAX_TOTAL_BYTES, entries = MAX_ENTRIES, expandedBytes = MAX_EXPANDED_BYTES } = limits;
  const size = fs.statSync(file).size;
  if (size > archiveBytes) throw new Error(`the archive is ${size} bytes, more than the ${archiveBytes} allowed`);
  const tarFile = `${intoDir}.tar`;
  fs.mkdirSync(path.dirname(intoDir), { recursive: true, mode: 0o700 });
  try {
    extractTar(decompress(file, tarFile, expandedBytes), intoDir, { totalBytes, entries });
  } finally {
    fs.rmSync(tarFile, { force: true });
  }
  return intoDir;
}

function extractTar(file, intoDir, { totalBytes, entries }) {
  let problems;
  try {
    problems = listEntries(file, { totalBytes, entries });
  } catch (error) {
    throw new Error(`not a readable .tar.gz archive (${error.message})`);
  }
  if (problems.length) throw new Error(`refused: ${problems.join('; ')}`);
  fs.rmSync(intoDir, { recursive: true, force: true });
  fs.mkdirSync(intoDir, { recursive: true, mode: 0o700 });
  tar().x({
    file,
    cwd: intoDir,
    sync: true,
    strict: true,
    preservePaths: false,
    preserveOwner: false,
    noChmod: false,
    filter: (name, entry) => ALLOWED_TYPES.has(entry.type) && unsafeName(name) === null,
  });
  verifyTree(intoDir);
}

module.exports = { extractModArchive, MAX_EXPANDED_BYTES };
