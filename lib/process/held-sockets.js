'use strict';
// The primary keeps a descriptor of each TCP listening socket (kill -9
// of every worker closed the port, because Node's cluster closes a shared socket once no worker
// holds it; clients got ECONNREFUSED until a replacement listened, 0.5-1 s). The first worker to
// listen on an address sends its socket to the primary, which only keeps it open: it never calls
// listen on it, so it never accepts, and connections wait in the kernel's backlog while no worker
// is alive. Every later worker listens on that same socket instead of binding again.
//
// Held only where it is safe:
// - schedulingPolicy "none" (SCHED_NONE). With "rr" the workers never see the socket: the
//   primary's cluster module owns it (and closes it with the last worker).
// - TCP addresses. A Unix socket is not held: Node hands a pipe given to listen() in a worker to
//   the cluster's lookup, and closing the primary's own copy unlinks the socket file anyway.
// - Node versions where server.listen(handle) in a worker listens on the handle itself
//   (20.13 and later, 22 and later: nodejs/node#52056). Older ones ask the primary for a socket
//   with address null and port -1, which throws inside the primary's cluster code (Node 18
//   crashed in bind6): there nothing is held and the port closes as before.

const cluster = require('node:cluster');
const { parseListenAddress } = require('../config/listen-address');
const { hasPlainListener } = require('../net/listeners');

function listensOnHandleDirectly(version = process.versions.node) {
  const [major, minor] = version.split('.').map(Number);
  return major >= 22 || (major === 20 && minor >= 13);
}

// What names a held socket: the configured address, as listen options ({ port, host? } | { path }).
// null for what is never held (a Unix socket).
function socketKey(listen) {
  if (!listen || listen.path !== undefined || !Number.isInteger(listen.port)) return null;
  if (!listen.host) return `*:${listen.port}`;
  return listen.host.includes(':') ? `[${listen.host}]:${listen.port}` : `${listen.host}:${listen.port}`;
}

// The keys of the sockets a config listens on (the listeners net/listeners.js builds).
function configuredKeys(config) {
  const values = [];
  if (hasPlainListener(config)) values.push(config.port);
  if (config.secure) values.push(config.sport);
  return values.map((value) => socketKey(parseListenAddress(value))).filter(Boolean);
}

// In the primary. Nothing here may throw: a socket that cannot be kept or given is logged and the
// port behaves as without it.
class HeldSockets {
  constructor({ log, wantedKeys, nodeVersion = process.versions.node }) {
    this.log = log;
    this.wantedKeys = wantedKeys; // () => the keys of the current config
    this.nodeVersion = nodeVersion;
    this.handles = new Map(); // key -> TCP handle
    this.warned = false;
  }

  // Decided at the first fork (the scheduling policy is frozen then).
  enabled() {
    if (cluster.schedulingPolicy !== cluster.SCHED_NONE) return false;
    if (listensOnHandleDirectly(this.nodeVersion)) return true;
    if (!this.warned) {
      this.warned = true;
      this.log.warn(`Node ${this.nodeVersion} cannot give a worker a listening socket held by the primary (20.13 or later can): if every worker dies at once, the port is closed until a replacement listens`);
    }
    return false;
  }

  // A worker's 'listening-socket' message (process/messages.js), its socket attached.
  keep(message, handle) {
    if (!handle) return;
    try {
      if (this.handles.has(message.key) || !this.wantedKeys().includes(message.key)) handle.close();
      else this.handles.set(message.key, handle);
    } catch (error) {
      this.log.warn(`cannot keep the listening socket of ${message.key}: ${error.message}`);
    }
  }

  // Before a worker gets its config: the sockets it must listen on instead of binding again.
  giveTo(worker) {
    for (const key of this.wantedKeys()) {
      const handle = this.handles.get(key);
      if (!handle) continue;
      const failed = (error) => this.log.warn(`cannot give worker ${worker.process.pid} the listening socket of ${key}: ${error.message}`);
      try {
        // With a callback, a failed send is reported to it instead of as an 'error' event.
        worker.send({ type: 'held-socket', key }, handle, (error) => { if (error) failed(error); });
      } catch (error) {
        failed(error);
      }
    }
  }

  // At start, before the first fork: sockets an earlier svr left with systemd (fd-store.js). The
  // ones the config names are held as if a worker had sent them; -> the keys of the others,
  // closed here.
  adopt(sockets) {
    const dropped = [];
    const usable = this.enabled();
    for (const [key, handle] of sockets) {
      if (usable && this.wantedKeys().includes(key) && !this.handles.has(key)) {
        this.handles.set(key, handle);
        continue;
      }
      dropped.push(key);
      this.close(key, handle);
    }
    return dropped;
  }

  // After a reload: an address no longer configured is let go (its port closes once the old
  // workers have stopped accepting). -> the keys let go.
  keepOnly(keys) {
    const dropped = [];
    for (const [key, handle] of this.handles) {
      if (keys.includes(key)) continue;
      this.handles.delete(key);
      dropped.push(key);
      this.close(key, handle);
    }
    return dropped;
  }

  close(key, handle) {
    try {
      handle.close();
    } catch (error) {
      this.log.warn(`cannot close the listening socket of ${key}: ${error.message}`);
    }
  }

  // On a stop: new clients are refused once the workers stop accepting, rather than left waiting
  // in a backlog nobody will accept from.
  closeAll() {
    this.keepOnly([]);
  }
}

// In a worker: the sockets the primary gave it, and the report of one it bound first.
function workerSockets() {
  const held = new Map(); // key -> TCP handle from the primary
  return {
    // A 'held-socket' message (process/messages.js), its socket attached.
    take(message, handle) {
      if (handle) held.set(message.key, handle);
    },
    heldSocket: (listen) => held.get(socketKey(listen)) || null,
    shareSocket(listen, server) {
      const key = socketKey(listen);
      const handle = server._handle;
      // A real descriptor only (with "rr" a worker's handle is a stand-in for the primary's).
      if (!key || !handle || !(handle.fd >= 0) || !process.connected) return;
      // A failed send (to a callback, never an 'error' event): the port behaves as without it.
      try {
        process.send({ type: 'listening-socket', key }, handle, () => {});
      } catch {
        // as above
      }
    },
  };
}

module.exports = { HeldSockets, workerSockets, configuredKeys, socketKey, listensOnHandleDirectly };
