'use strict';
// One orderer per certificate among every process (and host) that shares the state directory: a
// lock file created with O_EXCL. The holder touches it every timeout/3; a lock file untouched for
// `timeoutMs` was left by a holder that crashed (or lost the shared file system) and is taken
// over. Taking over renames the stale file to a name of our own first, so two waiters that both
// saw it stale cannot both remove a fresh lock the other just made.
//
//   acquire(file, { timeoutMs, waitMs, pollMs, owner }) -> release() (async) | throws on waitMs
//   released: the file is removed only if it is still ours.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

function tryCreate(file, owner) {
  try {
    fs.writeFileSync(file, JSON.stringify(owner) + '\n', { flag: 'wx', mode: 0o644 });
    return true;
  } catch (error) {
    if (error.code === 'EEXIST') return false;
    throw error;
  }
}

function takeOverIfStale(file, timeoutMs, now) {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    if (error.code === 'ENOENT') return true;
    throw error;
  }
  if (now - stat.mtimeMs < timeoutMs) return false;
  const aside = `${file}.stale-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  try {
    fs.renameSync(file, aside);
  } catch (error) {
    if (error.code === 'ENOENT') return true; // another waiter moved it first
    throw error;
  }
  // Another waiter may have replaced the stale file with its fresh lock between our stat and
  // rename: if what we moved is younger than the timeout, put it back.
  if (Date.now() - fs.statSync(aside).mtimeMs < timeoutMs) {
    try { fs.linkSync(aside, file); } catch { /* someone holds it anew; they win */ }
    fs.rmSync(aside, { force: true });
    return false;
  }
  fs.rmSync(aside, { force: true });
  return true;
}

async function acquire(file, { timeoutMs = 600000, waitMs = 1800000, pollMs = 1000, owner = {} } = {}) {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const me = { pid: process.pid, host: os.hostname(), since: new Date().toISOString(), token: crypto.randomBytes(8).toString('hex'), ...owner };
  const giveUpAt = Date.now() + waitMs;
  for (;;) {
    if (tryCreate(file, me)) break;
    if (takeOverIfStale(file, timeoutMs, Date.now()) && tryCreate(file, me)) break;
    if (Date.now() > giveUpAt) throw new Error(`${file} is held by ${describeHolder(file)} for longer than ${waitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  const touch = setInterval(() => {
    const now = new Date();
    try { fs.utimesSync(file, now, now); } catch { /* gone: the release below finds out */ }
  }, Math.max(Math.floor(timeoutMs / 3), 10));
  touch.unref();
  return function release() {
    clearInterval(touch);
    try {
      if (JSON.parse(fs.readFileSync(file, 'utf8')).token === me.token) fs.rmSync(file, { force: true });
    } catch { /* already gone */ }
  };
}

function describeHolder(file) {
  try {
    const holder = JSON.parse(fs.readFileSync(file, 'utf8'));
    return `process ${holder.pid} on ${holder.host} (since ${holder.since})`;
  } catch {
    return 'another process';
  }
}

module.exports = { acquire };
