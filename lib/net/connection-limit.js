'use strict';
// A worker never lets its descriptor table fill up (a table filled with
// idle connections broke the requests of connections already accepted, and once broke large files
// for good). Each listener sheds new connections beyond its share of maxConnections: Node closes
// them as soon as they are accepted, which costs the client a reset and the worker nothing.

const fs = require('node:fs');

// Per connection: its socket, plus the file a response streams from.
const DESCRIPTORS_PER_CONNECTION = 2;
// For the worker itself: Node, libuv, the IPC channel, logs, modules a script opens...
const RESERVED_DESCRIPTORS = 64;
const FALLBACK_FD_LIMIT = 1024;

// The soft RLIMIT_NOFILE of this process (Linux: /proc/self/limits; elsewhere a common default).
function descriptorLimit() {
  try {
    const match = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    if (match && match[1] !== 'unlimited') return Number(match[1]);
    if (match) return Infinity;
  } catch { /* not Linux */ }
  return FALLBACK_FD_LIMIT;
}

// config.maxConnections, or what the descriptor limit allows; null = no limit.
function maxConnections(config, fdLimit = descriptorLimit()) {
  if (Number.isInteger(config.maxConnections)) return config.maxConnections || null;
  if (!Number.isFinite(fdLimit)) return null;
  return Math.max(16, Math.floor((fdLimit - RESERVED_DESCRIPTORS) / DESCRIPTORS_PER_CONNECTION));
}

// Splits the worker's limit between its listeners (HTTP and HTTPS).
function limitConnections(servers, limit) {
  if (!limit) return;
  const share = Math.max(1, Math.floor(limit / servers.length));
  for (const server of servers) server.maxConnections = share;
}

// Accept errors (EMFILE, ENFILE...) come once per attempt while the table is full: one log line
// per second at most, with how many were not logged.
function throttledErrorLog(log, label, intervalMs = 1000) {
  let last = 0;
  let skipped = 0;
  return (error) => {
    const now = Date.now();
    if (now - last < intervalMs) { skipped++; return; }
    log.error(`${label}: ${error.message}${skipped ? ` (and ${skipped} more such errors)` : ''}`);
    last = now;
    skipped = 0;
  };
}

module.exports = { maxConnections, limitConnections, throttledErrorLog };
