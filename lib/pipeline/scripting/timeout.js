'use strict';
// scriptTimeout: a request that a mod or serverSideScript.js neither answers nor passes on was
// held for ever. Armed when user code gets the request, it answers it with 504 and the error page
// and logs who had it. A response that has started by then is left alone (a script that streams
// slowly is not cut); starting the response or passing the request on disarms it.
//
//   const timeout = createScriptTimeout(timeoutMs, onTimeout)   once per stage
//   timeout.arm(entry)      entry: the request's own record (stage.js ScriptRun), with fields
//                           res, deadline, older, newer (the list's links, kept on the entry)
//   timeout.disarm(entry)   any number of times
//   onTimeout(entry)        called once, only if the response has not started and is not destroyed
//
// Every request gets the same timeout, so deadlines come in the order requests are armed: the
// armed entries are a list, oldest first, linked through the entries themselves, and ONE timer
// waits for the oldest. Arming and disarming make no object (a timer per request made a Timeout,
// a 'close' listener and closures, and kept them with the request while its script ran); the
// timer is made again only when it fires, at most once per timeoutMs while requests are held.
// A request whose client went away before any answer stays listed until its deadline (its
// script usually holds it that long anyway).

function createScriptTimeout(timeoutMs, onTimeout) {
  if (!(timeoutMs > 0)) return { arm() {}, disarm() {} };
  let oldest = null;
  let newest = null;
  let timer = null;
  let timerAt = Infinity; // when the timer fires (ms, the monotonic clock below)

  const now = () => process.uptime() * 1000;

  function unlink(entry) {
    if (entry.older !== null) entry.older.newer = entry.newer;
    else oldest = entry.newer;
    if (entry.newer !== null) entry.newer.older = entry.older;
    else newest = entry.older;
    entry.older = null;
    entry.newer = null;
    entry.deadline = 0;
  }

  function expire() {
    timer = null;
    timerAt = Infinity;
    const time = now();
    while (oldest !== null && oldest.deadline <= time) {
      const entry = oldest;
      unlink(entry);
      const res = entry.res;
      if (!res.headersSent && !res.destroyed) onTimeout(entry);
    }
    schedule();
  }

  // The timer waits for the oldest entry; requests answered in the meantime have left the list.
  function schedule() {
    if (oldest === null || timerAt <= oldest.deadline) return;
    if (timer !== null) clearTimeout(timer);
    timerAt = oldest.deadline;
    timer = setTimeout(expire, Math.max(1, Math.ceil(timerAt - now())));
    timer.unref(); // the request's connection keeps the process alive, not its timeout
  }

  return {
    arm(entry) {
      if (entry.deadline !== 0) unlink(entry);
      entry.deadline = now() + timeoutMs;
      entry.older = newest;
      entry.newer = null;
      if (newest !== null) newest.newer = entry;
      else oldest = entry;
      newest = entry;
      schedule();
    },
    disarm(entry) {
      if (entry.deadline !== 0) unlink(entry);
    },
  };
}

module.exports = { createScriptTimeout };
