'use strict';
// A log file, for those who want one beside the journal (the accessLog and errorLog keys).
//
// Every process (the primary and each worker) opens the file itself with O_APPEND and writes whole
// lines, a batch of them in one write(). On Linux a write() to a regular file opened with O_APPEND
// goes to the end of the file under the inode's lock, so the lines of several processes never
// interleave or tear, and no line has to travel to the primary over IPC first (which would cost the
// primary a message per request, and lose what is queued when a worker dies).
//
// reopen() opens the same path again and closes the old descriptor: after logrotate has renamed
// the file, the lines written before land in the old file, the ones after in the new one, none lost.

const fs = require('node:fs');

const MODE = 0o640;

class LogFile {
  constructor(file) {
    this.path = file;
    this.fd = fs.openSync(file, 'a', MODE);
    this.failed = false;
  }

  // data: whole lines (a string or Buffer ending in '\n').
  write(data) {
    let buffer = typeof data === 'string' ? Buffer.from(data) : data;
    try {
      while (buffer.length > 0) buffer = buffer.subarray(fs.writeSync(this.fd, buffer));
      this.failed = false;
    } catch (error) {
      // A full disk loses log lines, never the server; say so once on stderr (the journal).
      if (!this.failed) process.stderr.write(`cannot write the log file ${this.path}: ${error.message}\n`);
      this.failed = true;
    }
  }

  reopen() {
    const fd = fs.openSync(this.path, 'a', MODE);
    const old = this.fd;
    this.fd = fd;
    fs.closeSync(old);
  }

  close() {
    fs.closeSync(this.fd);
  }
}

// The LogFile for `file` (null: none), reusing `current` when it is already that file.
function switchLogFile(current, file) {
  if (current && current.path === file) return current;
  const next = file ? new LogFile(file) : null;
  if (current) current.close();
  return next;
}

module.exports = { LogFile, switchLogFile };
