'use strict';
// CGI scripts: one process per request (RFC 3875), bounded and timed.
//
//   const slots = new Slots(max)            how many scripts run at once (per worker, per rule)
//   runCgi(req, res, { command, args, cwd, env, timeoutMs, slots, response, log, label, bufferBody })
//
// - The script runs in a process group of its own (detached), so the time limit, a client that
//   goes away and the end of the script kill the group with SIGKILL: whatever it started in the
//   background goes too, and nothing it leaves behind holds its output open.
// - bufferBody (a rule's requestBuffering): the request body is read whole (../upstream/request-body.js)
//   before the script takes a slot and starts, so a slow upload holds no process.
// - The request body is piped to stdin (backpressure through pipe()); stdout goes into the
//   CgiResponse as it comes, paused while the client's buffer is full; stderr lines go to the
//   error log (at most MAX_STDERR_BYTES per request).
// - A request reading its body or waiting for a slot does so within the same time limit; the limit's end before the
//   output started answers 504.

const { spawn } = require('node:child_process');
const { requestHasBody } = require('../upstream');
const { StderrLines } = require('./stderr-lines');
const { readBodyFirst } = require('../upstream/request-body');

const MAX_STDERR_BYTES = 65536;

class Slots {
  constructor(max) {
    this.max = max;
    this.running = 0;
    this.waiting = [];
  }

  // start() runs now or when a slot frees; the returned function leaves the queue.
  take(start) {
    if (this.running < this.max) {
      this.running++;
      start();
      return () => {};
    }
    this.waiting.push(start);
    return () => {
      const at = this.waiting.indexOf(start);
      if (at !== -1) this.waiting.splice(at, 1);
    };
  }

  give() {
    const next = this.waiting.shift();
    if (next) return next();
    this.running--;
  }
}

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // ESRCH: the group is gone already
  }
}

function runCgi(req, res, { command, args, cwd, env, timeoutMs, slots, response, log, label, bufferBody = false }) {
  let child = null;
  let finished = false;
  let cancelBuffering = null;
  let buffered = null; // the body read whole (bufferBody)
  const stderr = new StderrLines((line) => log.error(`cgi ${label}: ${req.url}: ${line}`), MAX_STDERR_BYTES);
  let leaveQueue = null;

  const timer = timeoutMs > 0 ? setTimeout(() => stop(504, `still running after ${timeoutMs} ms: killed`), timeoutMs) : null;

  function stop(status, reason) {
    if (finished) return;
    finish();
    if (response.headersSent) {
      log.warn(`cgi ${label}: ${req.method} ${req.url}: ${reason}; response cut`);
      res.destroy();
    } else {
      response.fail(status, reason); // logs the reason with the status
    }
  }

  function onClientClose() {
    if (!finished) finish(); // the client went away: the script goes too
  }

  function finish() {
    finished = true;
    res.removeListener('close', onClientClose);
    clearTimeout(timer);
    if (leaveQueue) leaveQueue();
    if (cancelBuffering) cancelBuffering();
    if (buffered !== null) buffered.dispose();
    if (child !== null) killGroup(child);
    stderr.flush();
  }

  function start() {
    leaveQueue = null;
    if (finished) return slots.give();
    try {
      child = spawn(command, args, { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (error) {
      slots.give();
      return stop(502, `cannot start: ${error.code || error.message}`);
    }
    child.once('error', (error) => stop(502, `cannot start: ${error.code || error.message}`));
    // What the script left running would hold its output open: the end of the script ends them.
    child.once('exit', () => killGroup(child));
    child.once('close', () => {
      slots.give();
      if (finished) return;
      finish();
      response.end();
    });
    child.stdin.on('error', () => {}); // a script that does not read its body: EPIPE is no failure
    if (buffered !== null) sendBuffered();
    else if (requestHasBody(req)) req.pipe(child.stdin);
    else child.stdin.end();
    child.stdout.on('data', (chunk) => {
      if (finished) return;
      const more = response.push(chunk);
      if (response.done) return finish(); // abandoned (a bad header block, a body over its length)
      if (more === false) {
        child.stdout.pause();
        res.once('drain', () => child.stdout.resume());
      }
    });
    child.stderr.on('data', (chunk) => stderr.push(chunk));
  }

  // The body read back from its file: one that cannot be read whole (cut short, an I/O error)
  // ends the script with 500, where it would otherwise wait for the rest of its stdin until the
  // time limit.
  function sendBuffered() {
    const source = buffered.open();
    source.on('close', () => { if (!source.readableEnded) stop(500, 'the buffered request body could not be read'); });
    source.pipe(child.stdin);
  }

  const takeSlot = () => { leaveQueue = slots.take(start); };

  res.once('close', onClientClose);
  // A body read whole first holds neither a process nor a slot while it arrives.
  if (bufferBody && requestHasBody(req)) {
    cancelBuffering = readBodyFirst(req, { isOver: () => finished, fail: stop, next: (body) => { buffered = body; takeSlot(); } });
  } else {
    takeSlot();
  }
}

module.exports = { runCgi, Slots };
