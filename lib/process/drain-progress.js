'use strict';
// A reload must not cut a download that is still moving (a 50 MB
// download at 2 MB/s was cut at 34 MB by the 10 s shutdownTimeout). While a worker drains, each
// busy connection's bytes written are sampled once a second; bytes handed to the kernel move only
// as the client acknowledges earlier ones (the socket buffers are bounded), so a count that grows
// means the transfer is moving. At shutdownTimeout the connections that did not move within
// PROGRESS_WINDOW_MS are cut; the others may go on, up to transferTimeoutMs after the drain began.

const SAMPLE_MS = 1000;
const PROGRESS_WINDOW_MS = 10000; // curl --limit-rate 2M over loopback wrote in bursts 2-4 s apart

// sockets: Map socket -> { active } (the worker's). Returns { moving(now), stop() }.
function watchProgress(sockets) {
  const seen = new Map(); // socket -> { bytes, movedAt }
  const sample = () => {
    const now = Date.now();
    for (const [socket, state] of sockets) {
      const bytes = socket.bytesWritten;
      const last = seen.get(socket);
      if (!last) seen.set(socket, { bytes, movedAt: now });
      else if (bytes !== last.bytes) { last.bytes = bytes; last.movedAt = now; }
      if (state.active === 0) seen.get(socket).movedAt = 0; // idle: nothing to wait for
    }
  };
  sample();
  const timer = setInterval(sample, SAMPLE_MS);
  timer.unref();
  return {
    // The busy connections whose bytes moved within the window.
    moving(now = Date.now()) {
      sample();
      const result = new Set();
      for (const [socket, state] of sockets) {
        const last = seen.get(socket);
        if (state.active > 0 && last && now - last.movedAt < PROGRESS_WINDOW_MS) result.add(socket);
      }
      return result;
    },
    stop: () => clearInterval(timer),
  };
}

module.exports = { watchProgress, SAMPLE_MS };
