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

const fs = require('node:fs');
const path = require('node:path');
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

// limits: the defaults above; tests pass smaller ones.
function extractModArchive(file, intoDir, limits = {}) {
  const { archiveBytes = MAX_ARCHIVE_BYTES, totalBytes = MAX_TOTAL_BYTES, entries = MAX_ENTRIES } = limits;
  const size = fs.statSync(file).size;
  if (size > archiveBytes) throw new Error(`the archive is ${size} bytes, more than the ${archiveBytes} allowed`);
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
  return intoDir;
}

module.exports = { extractModArchive };
