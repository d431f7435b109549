'use strict';
// `enableIPSpoofing` (SVR.JS) takes the client's address from the first X-Forwarded-For entry,
// whoever sends it. A rate limit counted by that address is then no limit: each request may name
// another address and get a fresh bucket. So the check warns, and names what to use instead.
//
//   spoofableRateLimits(config) -> [{ key, message }]   (warnings)

// "user" counts by address too when no user logged in.
const BY_ADDRESS = new Set([undefined, 'address', 'user']);

function spoofableRateLimits(config) {
  if (config.enableIPSpoofing !== true || !Array.isArray(config.rateLimits)) return [];
  const warnings = [];
  config.rateLimits.forEach((rule, i) => {
    if (!rule || typeof rule !== 'object' || !BY_ADDRESS.has(rule.key)) return;
    warnings.push({
      key: `rateLimits[${i}]`,
      message: 'counts by the client\'s address, which enableIPSpoofing takes from X-Forwarded-For whoever sends it: '
        + 'a client that sends another address each time is never limited; list your proxies in trustedProxies instead of enableIPSpoofing',
    });
  });
  return warnings;
}

module.exports = { spoofableRateLimits };
