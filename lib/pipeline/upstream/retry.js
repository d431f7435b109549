'use strict';
// Sends a request to the upstreams of a pool until one answers: retries only for idempotent
// methods without a request body, or with one read whole (requestBuffering: sent again from its
// first byte; a body streaming from the client is partly gone), only before any response byte,
// and only after a failure to connect (another upstream) or a reset of a reused keep-alive
// connection (the upstream closed it as we sent: the same upstream may be tried again). Passive
// health is recorded here.

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

function requestHasBody(req) {
  if (req.httpVersionMajor === 2) return !(req.stream && req.stream.endAfterHeaders);
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

// options: { pool, retries, log, sendError, answerFailure?, bodyReplayable? }. answerFailure(status)
// -> true when the caller answered the client itself (the cache's stale-if-error) instead of the
// error page; bodyReplayable: the request's body was read whole and each try sends all of it.
// sendOnce(upstream, onFailure): one try through the upstream's transport; onFailure({ status,
// reason, beforeRequestSent, reusedReset, countsAgainstUpstream }) at most once, and only while no
// response header has reached the client.
function tryUpstreams(req, res, { pool, retries, log, sendError, answerFailure, bodyReplayable = false }, sendOnce) {
  const canRetry = IDEMPOTENT.has(req.method) && (bodyReplayable || !requestHasBody(req));
  const tried = new Set();
  let retriesLeft = retries;

  const giveUp = (status, upstream, reason) => {
    log.warn(`proxy: ${req.method} ${req.url} -> ${upstream ? upstream.label : 'no upstream'}: ${reason}; answering ${status}`);
    if (!res.headersSent && answerFailure && answerFailure(status)) return;
    if (!res.headersSent) sendError(req, res, status);
    else res.destroy();
  };

  const attempt = () => {
    const upstream = pool.pick(tried);
    if (!upstream) return giveUp(502, null, 'every upstream failed');
    tried.add(upstream);
    return sendOnce(upstream, (failure) => {
      const retry = canRetry && retriesLeft > 0 && !res.headersSent && !res.destroyed && failure.beforeRequestSent;
      if (failure.reusedReset) tried.delete(upstream); // the connection was stale, not the upstream
      else if (failure.countsAgainstUpstream) upstream.recordFailure(pool.passive);
      if (retry) {
        retriesLeft--;
        return attempt();
      }
      return giveUp(failure.status, upstream, failure.reason);
    });
  };
  attempt();
}

module.exports = { tryUpstreams, requestHasBody };
