'use strict';
// Diagnostics go to stderr, one line each, so that under systemd they land in the journal
// and in a terminal they stay apart from the access log on stdout.

const cluster = require('node:cluster');

function role() {
  return cluster.isPrimary ? 'primary' : `worker ${process.pid}`;
}

function write(level, message) {
  process.stderr.write(`${new Date().toISOString()} ${level} ${role()}: ${message}\n`);
}

module.exports = {
  info: (message) => write('info', message),
  warn: (message) => write('warn', message),
  error: (message) => write('error', message),
};
