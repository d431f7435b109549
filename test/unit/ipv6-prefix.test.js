'use strict';
// ipv6Network: every spelling of an address gives the same network, and bits past the prefix go.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { ipv6Network } = require('../../lib/http/ipv6-prefix');

test('addresses of one /64 share a network; the next /64 does not', () => {
  const net = ipv6Network('2001:db8::1', 64);
  assert.equal(net, '2001:db8:0:0:0:0:0:0/64');
  for (const address of ['2001:db8::32', '2001:DB8:0:0:ffff::1', '2001:db8:0:0:1:2:3:4', '2001:0db8::']) assert.equal(ipv6Network(address, 64), net, address);
  assert.notEqual(ipv6Network('2001:db8:0:1::1', 64), net);
});

test('prefixes that cut a group, an IPv4 tail, a zone, 128', () => {
  assert.equal(ipv6Network('2001:db8:1:2:3:4:5:6', 60), '2001:db8:1:0:0:0:0:0/60');
  assert.equal(ipv6Network('2001:db8:1:1f::', 60), '2001:db8:1:10:0:0:0:0/60');
  assert.equal(ipv6Network('64:ff9b::1.2.3.4', 128), '64:ff9b:0:0:0:0:102:304/128');
  assert.equal(ipv6Network('fe80::1%eth0', 64), 'fe80:0:0:0:0:0:0:0/64');
  assert.equal(ipv6Network('::1', 128), '0:0:0:0:0:0:0:1/128');
  assert.equal(ipv6Network('1.2.3.4', 64), '1.2.3.4', 'not IPv6: as it is');
});
