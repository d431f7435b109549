'use strict';
// Stage 3: headers every response gets. Computed once at start; per request only the headers
// whose value contains SVR.JS's `{path}` placeholder are filled in (with req.url after rewriting).

const http = require('http');
const { serverString } = require('../product');

// Returns a list of problems (strings with key paths); empty when all headers are usable.
function validateCustomHeaders(customHeaders) {
  const errors = [];
  if (!customHeaders || typeof customHeaders !== 'object') return errors;
  for (const name of Object.keys(customHeaders)) {
    const value = customHeaders[name];
    try {
      http.validateHeaderName(name);
    } catch (err) {
      errors.push(`customHeaders: "${name}" is not a valid header name`);
      continue;
    }
    const values = Array.isArray(value) ? value : [value];
    values.forEach((v) => {
      if (typeof v !== 'string' && typeof v !== 'number') {
        errors.push(`customHeaders.${name}: expected a string, found ${JSON.stringify(v)}`);
        return;
      }
      try {
        http.validateHeaderValue(name, String(v));
      } catch (err) {
        errors.push(`customHeaders.${name}: the value contains characters not allowed in a header`);
      }
    });
  }
  return errors;
}

function createResponseHeaders(config, context) {
  const server = serverString(config.exposeServerVersion === true);
  const fixed = [['Server', server]];
  const dynamic = [];
  const custom = config.customHeaders || {};
  for (const name of Object.keys(custom)) {
    const value = custom[name];
    const str = Array.isArray(value) ? value.map(String) : String(value);
    const hasPath = Array.isArray(str) ? str.some((s) => s.includes('{path}')) : str.includes('{path}');
    // customHeaders may override Server (SVR.JS allows it); last one wins.
    if (name.toLowerCase() === 'server') fixed[0] = ['Server', str];
    else if (hasPath) dynamic.push([name, str]);
    else fixed.push([name, str]);
  }
  const fillPath = (v, p) => v.split('{path}').join(p);

  // Returns { early(res), late(req, res) }: `early` runs first thing for every request (so even a
  // 400 from the sanitizer names the server), `late` fills `{path}` after rewriting (stage 3).
  function early(res) {
    for (let i = 0; i < fixed.length; i++) res.setHeader(fixed[i][0], fixed[i][1]);
  }
  function late(req, res) {
    for (let i = 0; i < dynamic.length; i++) {
      const [name, value] = dynamic[i];
      const filled = Array.isArray(value) ? value.map((v) => fillPath(v, req.url)) : fillPath(value, req.url);
      try {
        res.setHeader(name, filled);
      } catch (err) {
        // req.url is sanitized ASCII, so this should not happen; never fail the request for it.
      }
    }
  }
  return { early, late };
}


// Adds a request header name to Vary without dropping what customHeaders or another stage put
// there (a cache must key on all of them).
function appendVary(res, name) {
  const current = res.getHeader('vary');
  if (current === undefined) return res.setHeader('Vary', name);
  const text = String(current);
  const listed = text.split(',').map((token) => token.trim().toLowerCase());
  if (!listed.includes(name.toLowerCase()) && !listed.includes('*')) res.setHeader('Vary', `${text}, ${name}`);
}

module.exports = { appendVary, createResponseHeaders, validateCustomHeaders };
