'use strict';
// Lists of client addresses and CIDR blocks (`blacklist`, `trustedProxies`, a rule's `users`),
// compiled once into a net.BlockList. Node built-ins only.
//
//   compileAddressList(entries, key) -> { has(address) -> boolean, size, errors: [string] }
//   plainAddress(address)            -> '1.2.3.4' for '::ffff:1.2.3.4', else the address itself
//
// Entries as SVR.JS writes them: "203.0.113.7", "10.0.0.0/8", "2001:db8::/32", "localhost" (::1
// and 127.0.0.1), and the IPv4-mapped forms SVR.JS's `block` command saves ("::ffff:203.0.113.7",
// "::ffff:10.0.0.0/104"), which mean their IPv4 address or block. An IPv4 client seen on a
// dual-stack socket as ::ffff:a.b.c.d is matched as a.b.c.d.

const net = require('node:net');

const MAPPED_PREFIX = '::ffff:';

function plainAddress(address) {
  if (typeof address !== 'string') return '';
  const lower = address.toLowerCase();
  return lower.startsWith(MAPPED_PREFIX) && net.isIPv4(lower.slice(7)) ? lower.slice(7) : address;
}

// "::ffff:10.0.0.0/104" -> { address: "10.0.0.0", prefix: 8, family: 4 }, or a reason string.
function parseEntry(entry) {
  if (typeof entry !== 'string') return 'not a string';
  const [rawAddress, prefixText, extra] = entry.trim().split('/');
  if (extra !== undefined) return 'more than one "/"';
  const mapped = rawAddress.toLowerCase().startsWith(MAPPED_PREFIX) && net.isIPv4(rawAddress.slice(7));
  const address = mapped ? rawAddress.slice(7) : rawAddress;
  const family = net.isIP(address);
  if (family === 0) return 'not an IP address';
  const max = family === 6 ? 128 : 32;
  if (prefixText === undefined) return { address, prefix: max, family };
  if (!/^\d{1,3}$/.test(prefixText)) return 'the prefix length is not a number';
  const prefix = Number(prefixText) - (mapped ? 96 : 0);
  if (prefix < 0 || prefix > max) return `the prefix length must be 0 to ${mapped ? '128 (96 to 128 for ::ffff:a.b.c.d)' : max}`;
  return { address, prefix, family };
}

function compileAddressList(entries, key) {
  const blocks = new net.BlockList();
  const errors = [];
  let size = 0;
  (entries || []).forEach((entry, i) => {
    if (entry === 'localhost') {
      blocks.addAddress('127.0.0.1', 'ipv4');
      blocks.addAddress('::1', 'ipv6');
      size++;
      return;
    }
    const parsed = parseEntry(entry);
    if (typeof parsed === 'string') {
      errors.push(`${key}[${i}]: expected an IP address or CIDR block such as "10.0.0.0/8", found ${JSON.stringify(entry)}: ${parsed}`);
      return;
    }
    blocks.addSubnet(parsed.address, parsed.prefix, parsed.family === 6 ? 'ipv6' : 'ipv4');
    size++;
  });
  const has = size === 0 ? () => false : (address) => {
    const plain = plainAddress(address);
    const family = net.isIP(plain);
    return family !== 0 && blocks.check(plain, family === 6 ? 'ipv6' : 'ipv4');
  };
  return { has, size, errors };
}

module.exports = { compileAddressList, plainAddress };
