'use strict';
// Diagnostics go to stderr, one line each, so that under systemd they land in the journal
// and in a terminal they stay apart from the access log on stdout.

const cluster = require('node:cluster');
const { switchLogFile } = require('./log-file');

let file = null; // a LogFile when the config has errorLog: a copy of every line, for file-based tools

function role() {
  return cluster.isPrimary ? 'primary' : `worker ${process.pid}`;
}

function write(level, message) {
  const line = `${new Date().toISOString()} ${level} ${role()}: ${message}\n`;
  process.stderr.write(line); // always: `systemctl status` and the journal keep showing what happened
  if (file) file.write(line);
}

module.exports = {
  info: (message) => write('info', message),
  warn: (message) => write('warn', message),
  error: (message) => write('error', message),
  // errorLog: a path, or null for none. Throws when the file cannot be opened.
  useFile: (path) => { file = switchLogFile(file, path || null); },
  reopen: () => { if (file) file.reopen(); },
};
