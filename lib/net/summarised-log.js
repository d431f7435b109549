'use strict';
// Warnings a client can cause once per connection (a PROXY protocol refusal, say), logged so that
// a flood of connections cannot flood the log: the first of an interval at once, so that a
// misconfigured balancer shows up immediately; the others summed up in one line at the end of
// the interval, with how many there were and the peers that caused most.
//
//   summarisedWarnings(log, { intervalMs, label }) -> warn(peer, message)

const REFUSAL_LOG_INTERVAL_MS = 10000;
const TOP_PEERS = 3;
const MAX_PEERS_COUNTED = 1000; // beyond, a flood from many addresses is counted without its peers

function summarisedWarnings(log, { intervalMs = REFUSAL_LOG_INTERVAL_MS, label }) {
  let open = false; // within an interval that began with a logged line
  let suppressed = 0;
  let byPeer = new Map();

  const endInterval = () => {
    if (suppressed === 0) {
      open = false;
      return;
    }
    log.warn(`${label}: ${suppressed} more such refusals in the last ${intervalMs} ms (${topPeers(byPeer)})`);
    suppressed = 0;
    byPeer = new Map();
    setTimeout(endInterval, intervalMs).unref(); // a flood goes on: one summary per interval
  };

  return function warn(peer, message) {
    if (!open) {
      open = true;
      log.warn(`${label}: ${message}`);
      setTimeout(endInterval, intervalMs).unref();
      return;
    }
    suppressed++;
    if (byPeer.has(peer) || byPeer.size < MAX_PEERS_COUNTED) byPeer.set(peer, (byPeer.get(peer) || 0) + 1);
  };
}

function topPeers(byPeer) {
  return [...byPeer].sort((a, b) => b[1] - a[1]).slice(0, TOP_PEERS).map(([peer, count]) => `${peer}: ${count}`).join(', ');
}

module.exports = { summarisedWarnings, REFUSAL_LOG_INTERVAL_MS };
