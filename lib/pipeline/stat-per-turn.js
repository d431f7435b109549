'use strict';
// The path policy's questions to the file system (lstat, stat, realpath), asked at most once per
// path in each turn of the event loop: requests for the same file handled in one turn share the
// answer.
//
// Why: under load a worker handles a batch of ready connections per turn, and each request used to
// make its own `lstat`, the largest single cost of a small static file after the kernel's send
// (about 2 µs of a 17 µs request, with the Stats object it builds). Sharing it within the batch
// takes most of that off.
//
// Why it stays exact: the answers are dropped by a setImmediate scheduled with the first one, and
// a pending setImmediate keeps the event loop from blocking in its poll for new input until it has
// run. So the worker never waits for new requests while holding an answer: a request that reaches
// an idle worker is always checked afresh, and a change is seen by every request handled after the
// turn in which it happened. Only requests handled in the same turn as the check share it. (An
// answer made outside the poll for input, in a timer's or an immediate's callback, lasts until the
// next check phase: through one poll that takes what has arrived and does not wait.) A failure
// (ENOENT, EACCES...) is never kept: it is thrown to each caller as before.
//
// The answers are the file system's own objects, shared by the requests of a turn: nobody
// may change them.
//
//   oncePerTurn(ask) -> ask'      ask(key) -> answer (not undefined); ask' answers each key once
//                                  per turn, a throw is passed on and not kept
//   lstatSync(path) / statSync(path) -> fs.Stats        (throw as fs's do)
//   realpathSync(path) -> string                        (fs.realpathSync.native)

const fs = require('node:fs');

let touched = []; // the answer maps that hold answers of this turn
let dropScheduled = false;

function dropAnswers() {
  const maps = touched;
  touched = [];
  dropScheduled = false;
  for (let i = 0; i < maps.length; i++) maps[i].clear();
}

function keep(answers, key, answer) {
  if (answers.size === 0) touched.push(answers);
  answers.set(key, answer);
  if (!dropScheduled) {
    dropScheduled = true;
    setImmediate(dropAnswers);
  }
  return answer;
}

function oncePerTurn(ask) {
  const answers = new Map();
  return function answerOnce(key) {
    const known = answers.get(key);
    return known !== undefined ? known : keep(answers, key, ask(key));
  };
}

const lstatSync = oncePerTurn((path) => fs.lstatSync(path));
const statSync = oncePerTurn((path) => fs.statSync(path));
const realpathSync = oncePerTurn((path) => fs.realpathSync.native(path));

module.exports = { oncePerTurn, lstatSync, statSync, realpathSync };
