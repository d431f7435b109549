'use strict';
// Which peers may speak for someone else: the `trustedProxies` list (CIDR blocks or single
// addresses). Only a trusted peer may send a PROXY protocol header, and only a trusted peer's
// X-Forwarded-* / Forwarded headers are kept (and appended to) by the reverse proxy.
//
//   compileTrustedProxies(list) -> { isTrusted(address) -> boolean, errors: [string] }

const net = require('node:net');

function compileTrustedProxies(list, key = 'trustedProxies') {
  const blocks = new net.BlockList();
  const errors = [];
  let count = 0;
  (list || []).forEach((entry, i) => {
    const problem = addEntry(blocks, entry);
    if (problem) errors.push(`${key}[${i}]: expected an IP address or CIDR block such as "10.0.0.0/8", found ${JSON.stringify(entry)}: ${problem}`);
    else count++;
  });
  const isTrusted = count === 0 ? () => false : (address) => {
    const plain = plainAddress(address);
    const family = net.isIP(plain);
    return family !== 0 && blocks.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  };
  return { isTrusted, errors };
}

function addEntry(blocks, entry) {
  if (typeof entry !== 'string') return 'not a string';
  const [address, prefixText, extra] = entry.split('/');
  const family = net.isIP(address);
  if (family === 0 || extra !== undefined) return 'not an IP address';
  const type = family === 6 ? 'ipv6' : 'ipv4';
  const max = family === 6 ? 128 : 32;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText ?? String(max)) || prefix > max) return `the prefix length must be 0 to ${max}`;
  blocks.addSubnet(address, prefix, type);
  return null;
}

// An IPv4 peer on a dual-stack socket shows as ::ffff:1.2.3.4; compare it as 1.2.3.4.
function plainAddress(address) {
  if (typeof address !== 'string') return '';
  return address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
}

module.exports = { compileTrustedProxies, plainAddress };
