'use strict';
// Runs a list of stages for a request. A stage is `stage(req, res, next)`: it answers the request,
// or calls next() to pass it on (at once or later). A stage may be async; a throw, a rejected
// promise or next(error) all go to `onError(req, res, error)`, the one place errors are answered.
// A stage that finishes synchronously costs no promise. Once the response has started, next()
// runs nothing more: a stage that answered and then passed the request on would otherwise have
// the next stage write a second answer on top of the first.

function runStages(stages, onError) {
  return function handle(req, res) {
    let index = 0;
    const next = (error) => {
      if (error !== undefined && error !== null) return onError(req, res, error);
      if (res.headersSent || res.writableEnded) return undefined;
      const stage = stages[index++];
      if (stage === undefined) return undefined; // the last stage answers; nothing after it
      try {
        const result = stage(req, res, next);
        if (result !== undefined && result !== null && typeof result.then === 'function') {
          result.then(undefined, (err) => onError(req, res, err));
        }
      } catch (err) {
        onError(req, res, err);
      }
      return undefined;
    };
    next();
  };
}

module.exports = { runStages };
