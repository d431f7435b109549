'use strict';
// The primary keeps a descriptor of each listening socket (attack report, finding 17: kill -9 of
// every worker closed the port, because Node's cluster closes a shared socket once no worker
// holds it; clients got ECONNREFUSED for ~300 ms). The first worker to listen on a port sends
// its socket to the primary; the primary never accepts on it (it never calls listen), it only
// keeps it open, so connections wait in the kernel's backlog while no worker is alive, and every
// later worker listens on that same socket (a new bind would fail: the port is taken by it).

class HeldSockets {
  constructor() {
    this.handles = new Map(); // configured port -> TCP handle
  }

  // A worker reports { type: 'listening-socket', port } with its socket attached.
  watch(worker) {
    worker.on('message', (message, handle) => {
      if (message?.type !== 'listening-socket' || !handle) return;
      if (this.handles.has(message.port)) handle.close();
      else this.handles.set(message.port, handle);
    });
  }

  // Before a worker gets its config: the sockets it must listen on instead of binding again.
  giveTo(worker, ports) {
    for (const port of ports) {
      const handle = this.handles.get(port);
      if (handle) worker.send({ type: 'held-socket', port }, handle);
    }
  }

  // After a reload: a port no longer configured is let go.
  keepOnly(ports) {
    for (const [port, handle] of this.handles) {
      if (ports.includes(port)) continue;
      handle.close();
      this.handles.delete(port);
    }
  }

  // On a stop: new clients are refused at once rather than left waiting in a backlog.
  closeAll() {
    this.keepOnly([]);
  }
}

// The ports a config listens on, as the worker names them.
function configuredPorts(config) {
  const ports = [];
  if (!config.secure || !config.disableNonEncryptedServer) ports.push(config.port);
  if (config.secure) ports.push(config.sport);
  return ports;
}

module.exports = { HeldSockets, configuredPorts };
