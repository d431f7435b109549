'use strict';
// A `nonStandardCodes` rule with `url` matches one exact path (decoded, repeated slashes
// collapsed). In front of a `proxy` rule that is rarely what is meant: the application behind it
// may read "/api/admin/", "/api/ADMIN", "/api/admin;x" or "/api/admin." as "/api/admin", and
// those are forwarded. So the check warns, and names the prefix rule that covers them.
//
//   urlRulesBeforeProxy(config) -> [{ key, message }]   (warnings)

function urlRulesBeforeProxy(config) {
  const rules = Array.isArray(config.nonStandardCodes) ? config.nonStandardCodes : [];
  const proxies = Array.isArray(config.proxy) ? config.proxy : [];
  const warnings = [];
  rules.forEach((rule, i) => {
    if (!rule || typeof rule.url !== 'string' || rule.url === '/') return;
    const at = proxies.findIndex((proxy) => proxy && forwards(proxy.path || '/', rule.url));
    if (at === -1) return;
    warnings.push({
      key: `nonStandardCodes[${i}].url`,
      message: `protects exactly ${JSON.stringify(rule.url)}, but proxy[${at}] (${JSON.stringify(proxies[at].path || '/')}) forwards the paths around it, `
        + `which the application may read as the same (a trailing "/", other letter case, ";x"): to cover them use `
        + `"regex": ${JSON.stringify(prefixRegex(rule.url))} instead of "url"`,
    });
  });
  return warnings;
}

// As the proxy stage matches: the prefix, or "/api" for the prefix "/api/".
function forwards(prefix, path) {
  return path.startsWith(prefix) || (prefix.length > 1 && prefix.endsWith('/') && path === prefix.slice(0, -1));
}

// The path, then the end or "/", ";" or ".", in any letter case.
function prefixRegex(path) {
  const escaped = path.replace(/\/+$/, '').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return `/^${escaped}(?:[\\/;.]|$)/i`;
}

module.exports = { urlRulesBeforeProxy, prefixRegex };
