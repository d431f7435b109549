'use strict';
// The network an IPv6 address belongs to, for keys that must not let one client rotate through its
// own addresses: a home or a server is given a whole /64 (2^64 addresses), so one bucket per full
// address is no limit at all for an IPv6 client. Node built-ins only.
//
//   ipv6Network('2001:db8::1:2', 64) -> '2001:db8:0:0:0:0:0:0/64'
//
// The address is one net.isIPv6 accepts (a zone such as %eth0 is dropped first); the result is the
// same for every spelling of the same network, so it can key a map.

const net = require('node:net');

// '2001:db8::1.2.3.4' -> the eight 16-bit groups as numbers
function groupsOf(address) {
  const lastColon = address.lastIndexOf(':');
  let text = address;
  if (address.includes('.', lastColon)) { // an IPv4 tail is the last two groups written in decimal
    const [a, b, c, d] = address.slice(lastColon + 1).split('.').map(Number);
    text = `${address.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::');
  const parse = (part) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const front = parse(head);
  if (rest === undefined) return front;
  const back = parse(rest);
  return [...front, ...new Array(8 - front.length - back.length).fill(0), ...back];
}

function ipv6Network(address, prefixLength) {
  const plain = address.split('%')[0];
  if (!net.isIPv6(plain)) return address;
  const groups = groupsOf(plain.toLowerCase());
  const masked = groups.map((group, i) => {
    const bitsKept = Math.max(0, Math.min(16, prefixLength - i * 16));
    return bitsKept === 16 ? group : group & ((0xffff << (16 - bitsKept)) & 0xffff);
  });
  return `${masked.map((group) => group.toString(16)).join(':')}/${prefixLength}`;
}

module.exports = { ipv6Network };
