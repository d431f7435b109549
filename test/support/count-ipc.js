'use strict';
// Preloaded into svr (NODE_OPTIONS=--require) by tests that count the messages svr's primary
// receives from its workers: each message bumps its type's count in IPC_COUNT_FILE, written at
// once so the test reads it without asking the server anything.
const cluster = require('node:cluster');
const fs = require('node:fs');

const file = process.env.IPC_COUNT_FILE;
if (file && cluster.isPrimary) {
  const counts = {};
  cluster.on('message', (worker, message) => {
    const type = message && typeof message === 'object' ? String(message.type) : typeof message;
    counts[type] = (counts[type] || 0) + 1;
    fs.writeFileSync(file, JSON.stringify(counts));
  });
}
