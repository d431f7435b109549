'use strict';
// The client address a request speaks for, from X-Forwarded-For. Node built-ins only.
//
//   firstForwarded(header)                -> the first (leftmost) entry: SVR.JS's enableIPSpoofing
//   nearestUntrusted(header, isTrusted)   -> walking from the right (the entry our peer added),
//                                            the first address that is not a trusted proxy; the
//                                            leftmost one when every entry is trusted
// Both answer null for a malformed header (an entry that is not a bare IP address), which the
// caller answers with 400, and undefined when there is no header.

const net = require('node:net');

function entries(header) {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header.join(',') : String(header);
  const list = text.split(',').map((entry) => entry.trim());
  return list.every((entry) => net.isIP(entry) !== 0) ? list : null;
}

function firstForwarded(header) {
  const list = entries(header);
  return list ? list[0] : list;
}

function nearestUntrusted(header, isTrusted) {
  const list = entries(header);
  if (!list) return list;
  for (let i = list.length - 1; i >= 0; i--) {
    if (!isTrusted(list[i])) return list[i];
  }
  return list[0];
}

module.exports = { firstForwarded, nearestUntrusted };
