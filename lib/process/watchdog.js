'use strict';
// Stuck workers are replaced (a `while (true) {}` in a script held
// its worker for good, and one per worker took the whole server down, silently).
//
// Worker side: a timer sends the primary a heartbeat, so a heartbeat that stops coming means
// the event loop stopped turning. Which request is to blame? Only user code (mods,
// serverSideScript.js) can loop for ever, so a request that enters user code may send a note at
// once: the write reaches the primary's pipe before the code runs, even if it never returns. Only
// the first request to enter user code after the worker's last message sends one, so a busy
// worker whose connections stay open sends at most two messages per heartbeat interval (the beat
// and one note), however many requests it serves (connections that come and go add the early
// beats below, at most five a second, and a note after each): a note per request cost the primary
// a fifth of the CPU of a small script's requests. What this costs: a worker that stalls in a
// later request of the same interval is described by the note's request, "or a later one".
// Static requests send nothing.
//
// Primary side: every worker's last heartbeat is checked once per interval; a worker silent for
// workerStallTimeout is logged (with the request it was running and for how long) and SIGKILLed;
// the supervisor's exit handler replaces it as any dead worker.

const HEARTBEAT_MAX_INTERVAL_MS = 1000;

function heartbeatInterval(stallTimeoutMs) {
  return Math.max(100, Math.min(HEARTBEAT_MAX_INTERVAL_MS, Math.floor(stallTimeoutMs / 4)));
}

// --- worker side ---

// SVR_HEARTBEAT_INTERVAL_MS: a test knob, not a config key. With the watchdog off, the timed
// beats come this far apart instead of every second, so that a test can tell what an early beat
// did from what a timed one would have done without timing either.
const KNOB_INTERVAL_MS = Math.max(0, Number(process.env.SVR_HEARTBEAT_INTERVAL_MS) || 0);

// How often a worker beats, for a stall timeout (0: the watchdog is off).
function beatInterval(stallTimeoutMs) {
  if (stallTimeoutMs > 0) return heartbeatInterval(stallTimeoutMs);
  return KNOB_INTERVAL_MS || HEARTBEAT_MAX_INTERVAL_MS;
}

// A burst of connections opened or closed together (a load balancer's pool, a benchmark's five
// connections) changes the balance at once; waiting for the next timed beat left all five on one
// worker for up to a second. So the worker calls connectionsChanged() as it accepts or loses a
// connection, and EARLY_BEAT_DELAY_MS later (the rest of the burst has arrived by then) its busy
// count goes out if it differs from the last one sent. After an early beat the next one waits
// EARLY_BEAT_GAP_MS: a site whose clients open a connection per request sends at most a few a
// second, not one per connection.
const EARLY_BEAT_DELAY_MS = 20;
const EARLY_BEAT_GAP_MS = 200;

// send(message): process.send. served(): requests this worker has been given so far.
// busyConnections(windowMs): its connections that carried a request within windowMs (rebalance.js).
// Returns { noteUserCode({ req, res }) for the scripting stage's hook, connectionsChanged() }.
function startHeartbeat({ stallTimeoutMs, send, served, busyConnections = () => undefined }) {
  // The last request that entered user code: the scripting stage's state for it ({ req, res }),
  // kept as it is (no object of our own per request), and when it entered.
  let current = null;
  let currentAt = 0;
  const running = () => {
    if (!current || current.res.writableEnded || current.res.destroyed) return null;
    return { method: current.req.method, url: current.req.url, forMs: Date.now() - currentAt };
  };
  const intervalMs = beatInterval(stallTimeoutMs);
  let noted = false; // a request entered user code since the last message, and the note went
  // busy: given by the timed beats and the early ones (rebalance.js reads it), never by a note.
  // note: the message names the first request to enter user code after the previous message.
  let lastBusy; // the busy count last sent
  const beat = (busy, note) => {
    noted = note;
    if (busy !== undefined) lastBusy = busy;
    send({ type: 'heartbeat', served: served(), running: running(), busy, note });
  };
  const timedBeat = () => beat(busyConnections(intervalMs), false);
  // Beats go even with the watchdog off: the supervisor learns from them whether a worker served.
  setInterval(timedBeat, intervalMs).unref();
  timedBeat();
  let earlyAt = 0; // when the pending early beat goes (0: none pending)
  let lastEarlyAt = -Infinity;
  const earlyBeat = () => {
    earlyAt = 0;
    const busy = busyConnections(intervalMs);
    if (busy === lastBusy) return;
    lastEarlyAt = Date.now();
    beat(busy, false);
  };
  return {
    noteUserCode(state) {
      current = state;
      currentAt = Date.now();
      if (stallTimeoutMs > 0 && !noted) beat(undefined, true);
    },
    connectionsChanged() {
      if (earlyAt !== 0) return;
      const now = Date.now();
      earlyAt = Math.max(now + EARLY_BEAT_DELAY_MS, lastEarlyAt + EARLY_BEAT_GAP_MS);
      setTimeout(earlyBeat, earlyAt - now).unref();
    },
  };
}

// --- primary side ---

// stallTimeoutMs(): the current config's value (a reload may change it).
// onStall(worker, description): called once per stalled worker, which is then SIGKILLed.
// onHeartbeat(worker, served, busy): what the worker reported (the supervisor's backoff reads
// served, its connection balancing busy).
class Watchdog {
  constructor({ stallTimeoutMs, onStall, onHeartbeat = () => {} }) {
    this.stallTimeoutMs = stallTimeoutMs;
    this.onStall = onStall;
    this.onHeartbeat = onHeartbeat;
    this.watched = new Map(); // worker -> { lastBeatAt, running, runningSince, served }
    this.timer = null;
  }

  watch(worker) {
    this.watched.set(worker, { lastBeatAt: 0, running: null, runningSince: 0, served: 0 });
    worker.once('exit', () => this.watched.delete(worker));
    this.schedule();
  }

  // A worker's 'heartbeat' message (process/messages.js).
  beat(worker, message) {
    const state = this.watched.get(worker);
    if (!state) return;
    const now = Date.now();
    state.lastBeatAt = now;
    state.served = message.served;
    state.running = message.running;
    state.runningSince = message.running ? now - message.running.forMs : 0;
    state.note = message.note === true;
    this.onHeartbeat(worker, message.served, message.busy);
  }

  // Re-armed at every check, so a reload's new timeout (and interval) applies at once.
  schedule() {
    if (this.timer || this.stallTimeoutMs() <= 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.check();
      if (this.watched.size > 0) this.schedule();
    }, heartbeatInterval(this.stallTimeoutMs()));
    this.timer.unref();
  }

  check() {
    const timeout = this.stallTimeoutMs();
    if (timeout <= 0) return;
    const now = Date.now();
    for (const [worker, state] of this.watched) {
      // Not yet beating: a starting worker is covered by the supervisor's ready timeout.
      if (state.lastBeatAt === 0 || state.stalled || worker.isDead()) continue;
      const silentMs = now - state.lastBeatAt;
      if (silentMs < timeout) continue;
      state.stalled = true;
      this.onStall(worker, describeStall(silentMs, state, now));
      worker.process.kill('SIGKILL');
    }
  }
}

function describeStall(silentMs, state, now) {
  // After a note, later requests may have entered user code unreported (one note per interval).
  const orLater = state.note ? ', or a request that entered user code after it' : '';
  const what = state.running
    ? `it was running ${state.running.method} ${state.running.url} (running for ${now - state.runningSince} ms)${orLater}`
    : 'no request was in user code at its last heartbeat';
  return `its event loop has not answered for ${silentMs} ms; ${what}`;
}

module.exports = { startHeartbeat, beatInterval, Watchdog, EARLY_BEAT_DELAY_MS, EARLY_BEAT_GAP_MS };
