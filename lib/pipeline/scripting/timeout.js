'use strict';
// scriptTimeout: a request that a mod or serverSideScript.js neither
// answers nor passes on was held for ever. A timer armed when user code gets the request answers
// it with 504 and the error page, and logs who had it. A response that has started by then is
// left alone (a script that streams slowly is not cut); passing the request on disarms it.

// onTimeout(who): called once, only if no response has started.
function armScriptTimeout(res, timeoutMs, who, onTimeout) {
  if (!(timeoutMs > 0)) return () => {};
  const timer = setTimeout(() => {
    if (!res.headersSent && !res.destroyed) onTimeout(who());
  }, timeoutMs);
  const disarm = () => clearTimeout(timer);
  res.once('close', disarm);
  return disarm;
}

module.exports = { armScriptTimeout };
