'use strict';
// The CPU-bound work every server does per request in the "cpu" scenario.
// Self-contained (no closures over module scope), so its source text can be
// pasted into the generated serverSideScript.js and run there unchanged.
function work() {
  function fib(n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
  }
  return fib(25); // about 0.7 ms of one core on the reference machine
}

module.exports = { work, workSource: work.toString() };
