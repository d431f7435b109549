'use strict';
// Restarts and upgrades that refuse no connection. Under systemd the primary leaves a copy of each
// listening socket it holds (held-sockets.js) in the service's file descriptor store
// (FileDescriptorStoreMax= in svr.service). While `systemctl restart svr` stops the old primary
// and starts the new one, systemd keeps that copy open: the port stays open, connections wait in
// the kernel's backlog, and the new primary gets the same sockets back ($LISTEN_FDS) and hands
// them to its workers instead of binding again. A `systemctl stop` empties the store (the port
// closes, as a stop should).
//
// Why this and not a svr.socket unit: the addresses stay where they are configured, in the config
// file; a socket unit would repeat them, and a config that moved to another port would leave the
// old one open with nobody accepting on it.
//
// Each socket is stored under the name of its address (socketKey: "*:80", "127.0.0.1:8080",
// "[::1]:443"), with ":" written as "_" (systemd separates names with ":"). A socket whose address
// the config no longer names is closed and removed from the store before any worker binds.

const fs = require('node:fs');
const net = require('node:net');
const { notifyWithFd, notifyFields } = require('./notify');

const PREFIX = 'svr-listen-';
const FIRST_FD = 3; // SD_LISTEN_FDS_START

const storeName = (key) => PREFIX + key.replace(/:/g, '_');
const keyOfName = (name) => (name.startsWith(PREFIX) ? name.slice(PREFIX.length).replace(/_/g, ':') : null);

// The sockets systemd passed to this process: { sockets: Map key -> TCP handle (not listening
// in this process; a worker listens on it), unusable: keys of svr's names it could not wrap
// (closed here; forget them), problems: lines to log }. Takes LISTEN_* out of the environment, so
// workers and user code never see them.
function takeStoredSockets(env = process.env, pid = process.pid) {
  const count = Number(env.LISTEN_FDS);
  const forUs = Number(env.LISTEN_PID) === pid;
  const names = (env.LISTEN_FDNAMES || '').split(':');
  delete env.LISTEN_FDS;
  delete env.LISTEN_PID;
  delete env.LISTEN_FDNAMES;
  const result = { sockets: new Map(), unusable: [], problems: [] };
  if (!forUs || !Number.isInteger(count) || count <= 0) return result;
  for (let i = 0; i < count; i++) {
    const fd = FIRST_FD + i;
    const key = keyOfName(names[i] || '');
    if (!key) {
      result.problems.push(`descriptor ${fd} from systemd (${names[i] || 'no name'}) is not one of svr's listening sockets: left alone`);
      continue;
    }
    // net's own way to wrap a listening descriptor (cluster uses it for shared handles).
    const handle = typeof net._createServerHandle === 'function' ? net._createServerHandle(undefined, undefined, undefined, fd) : null;
    if (typeof handle === 'object' && handle !== null) {
      result.sockets.set(key, handle);
      continue;
    }
    result.problems.push(`cannot take over the listening socket of ${key} from systemd (descriptor ${fd}): it is bound anew`);
    result.unusable.push(key);
    try { fs.closeSync(fd); } catch { /* already gone */ }
  }
  return result;
}

// Leaves each held socket (Map key -> handle) in the store; one already there is not added twice.
// Resolves when systemd has them; never rejects (notify.js logs a failure).
async function storeSockets(handles, log) {
  for (const [key, handle] of handles) {
    if (handle.fd >= 0) await notifyWithFd(handle.fd, storeName(key), log);
  }
}

// Takes the sockets of these keys out of the store, so that their ports close (and can be bound
// again, by this svr too).
async function forgetSockets(keys, log) {
  for (const key of keys) await notifyFields(['FDSTOREREMOVE=1', `FDNAME=${storeName(key)}`], log);
}

module.exports = { takeStoredSockets, storeSockets, forgetSockets, storeName, keyOfName };
