'use strict';
// Opening files below the web root so that what is served is decided from the opened descriptor,
// never from a path checked before it.
//
// The path policy (path-policy.js) checks a path with lstat/realpath; between that check and
// the open, anyone who can write below the web root can swap a file or a parent directory for a
// symbolic link. So every descriptor is checked after it is opened: the kernel says where the file
// it refers to really is (readlink of /proc/self/fd/N, a path made of real directory entries, with
// no symbolic link in it), and that must be exactly the real path the policy accepted. With
// followSymlinks false that real path is the requested path itself, so no component of what was
// opened can have been a link; with followSymlinks true it is the checked real path inside wwwroot.
// A descriptor that fails the check is closed and the request gets 404, as for any refused path.
//
// Flags: O_NONBLOCK so that a FIFO swapped in never blocks a thread-pool thread in open();
// O_NOFOLLOW (followSymlinks false) so that a final link is refused by the kernel at once.
//
//   const webRoot = createWebRoot(root, { followSymlinks, log })
//   webRoot.flags                 open flags for files below the root
//   webRoot.isAt(fd, real)        true when the descriptor's file is really at `real`
//   webRoot.fileAt(fd, real)      -> its stats when it is also a regular file, else null
//   webRoot.openSync(real, { directory })  -> { fd, stats } | null (null: not at `real` any more,
//                                   or not a regular file: a FIFO, socket or device swapped in)
//   webRoot.readContained(file[, maxBytes[, encoding]]) -> string (Buffer with encoding null): a
//                                   whole small file read under the same rule when it lies below
//                                   the root (error pages, .head/.foot, listing header/footer)
//   webRoot.dirPath(fd, real)     -> a path that names the opened directory itself (for readdir/stat)
//
// Without /proc (not Linux, or /proc not mounted) the location cannot be read from a descriptor:
// the check falls back to the path's real path and dev/ino, which narrows the window but cannot
// close it; a warning says so once at start.

const fs = require('node:fs');
const path = require('node:path');

const PROC_FD = '/proc/self/fd/';
const { O_RDONLY, O_NONBLOCK, O_NOFOLLOW, O_DIRECTORY } = fs.constants;

function procWorks(root) {
  let fd;
  try {
    fd = fs.openSync(root, O_RDONLY | O_DIRECTORY);
    return fs.readlinkSync(PROC_FD + fd) === root;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

function createWebRoot(root, { followSymlinks = false, log } = {}) {
  const rootPrefix = root === '/' ? '/' : root + path.sep;
  const flags = O_RDONLY | O_NONBLOCK | (followSymlinks ? 0 : (O_NOFOLLOW || 0));
  const hasProc = procWorks(root);
  if (!hasProc && log) {
    log.warn(`${PROC_FD} cannot be read: files are checked by path and inode after they are opened, which narrows but cannot close a symlink race below wwwroot`);
  }

  function inside(file) {
    return file === root || file.startsWith(rootPrefix);
  }

  function isAt(fd, real) {
    if (hasProc) {
      try {
        return fs.readlinkSync(PROC_FD + fd) === real;
      } catch {
        return false;
      }
    }
    try { // the fallback: the path still resolves to itself and to this very file
      if (fs.realpathSync.native(real) !== real) return false;
      const opened = fs.fstatSync(fd);
      const named = fs.lstatSync(real);
      return opened.dev === named.dev && opened.ino === named.ino;
    } catch {
      return false;
    }
  }

  // The stats of a descriptor opened for the file `real` when it is really there and a regular
  // file, else null: the path policy saw a regular file, but what was opened may since have been
  // swapped for a FIFO or a device (O_NONBLOCK let the open return), which is not served.
  function fileAt(fd, real) {
    if (!isAt(fd, real)) return null;
    const stats = fs.fstatSync(fd);
    return stats.isFile() ? stats : null;
  }

  function openSync(real, { directory = false } = {}) {
    const fd = fs.openSync(real, flags | (directory ? O_DIRECTORY : 0));
    let stats = null;
    try {
      if (!directory) stats = fileAt(fd, real);
      else if (isAt(fd, real)) stats = fs.fstatSync(fd);
      return stats === null ? null : { fd, stats };
    } finally {
      if (stats === null) fs.closeSync(fd);
    }
  }

  // For files svr reads once (custom error pages, .head/.foot): below the root, the file's real
  // location must be the path itself (followSymlinks false) or lie inside the root (true).
  function readContained(file, maxBytes = Infinity, encoding = 'utf8') {
    const fd = fs.openSync(file, inside(file) ? flags : O_RDONLY | O_NONBLOCK);
    try {
      if (inside(file)) { // outside the site it is the admin's explicit choice
        const at = hasProc ? fs.readlinkSync(PROC_FD + fd) : fs.realpathSync.native(file);
        if (followSymlinks ? !inside(at) : at !== file) {
          throw Object.assign(new Error(`${file} leads outside wwwroot or through a symbolic link`), { code: 'ELOOP' });
        }
      }
      const stats = fs.fstatSync(fd);
      if (!stats.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EISDIR' });
      if (stats.size > maxBytes) throw Object.assign(new Error(`${file} is larger than ${maxBytes} bytes`), { code: 'EFBIG' });
      return fs.readFileSync(fd, encoding);
    } finally {
      fs.closeSync(fd);
    }
  }

  function dirPath(fd, real) {
    return hasProc ? PROC_FD + fd : real;
  }

  return { flags, hasProc, isAt, fileAt, openSync, readContained, dirPath, inside };
}

module.exports = { createWebRoot };
