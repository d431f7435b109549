'use strict';
// lib/process/held-sockets.js without processes: which addresses are held and under which name,
// and which Node versions and scheduling policies hold them (test/process/limits-kill-all.test.js runs the
// real thing).

const test = require('node:test');
const assert = require('node:assert/strict');
const cluster = require('node:cluster');
const { HeldSockets, configuredKeys, socketKey, listensOnHandleDirectly } = require('../../lib/process/held-sockets');

test('socketKey: the listen address, never just the port; a Unix socket is not held', () => {
  assert.equal(socketKey({ port: 8080 }), '*:8080');
  assert.equal(socketKey({ port: 8080, host: '127.0.0.1' }), '127.0.0.1:8080');
  assert.equal(socketKey({ port: 8080, host: '::1' }), '[::1]:8080');
  assert.equal(socketKey({ path: '/run/svr/http.sock' }), null);
  assert.equal(socketKey(undefined), null);
});

test('configuredKeys: the plain and HTTPS listeners a config has', () => {
  assert.deepEqual(configuredKeys({ port: 80 }), ['*:80']);
  assert.deepEqual(configuredKeys({ port: '127.0.0.1:80', secure: true, sport: '[::1]:443' }), ['127.0.0.1:80', '[::1]:443']);
  assert.deepEqual(configuredKeys({ port: 80, secure: true, sport: 443, disableNonEncryptedServer: true }), ['*:443']);
  assert.deepEqual(configuredKeys({ port: './svr.sock', secure: true, sport: 443 }), ['*:443']);
});

test('listensOnHandleDirectly: Node 20.13+ and 22+ (nodejs/node#52056), not 18, 20.12 or 21', () => {
  for (const version of ['20.13.0', '20.19.2', '20.20.2', '22.0.0', '24.1.0']) assert.equal(listensOnHandleDirectly(version), true, version);
  for (const version of ['18.19.0', '20.0.0', '20.12.2', '21.7.3']) assert.equal(listensOnHandleDirectly(version), false, version);
});

test('HeldSockets.enabled: only with SCHED_NONE; an older Node is warned about once and holds nothing', (t) => {
  const policy = cluster.schedulingPolicy;
  t.after(() => { cluster.schedulingPolicy = policy; });
  const warnings = [];
  const log = { warn: (line) => warnings.push(line) };
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  assert.equal(new HeldSockets({ log, wantedKeys: () => [], nodeVersion: '20.19.2' }).enabled(), true);
  const old = new HeldSockets({ log, wantedKeys: () => [], nodeVersion: '20.12.2' });
  assert.equal(old.enabled(), false);
  assert.equal(old.enabled(), false);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /Node 20\.12\.2 cannot give a worker a listening socket held by the primary \(20\.13 or later can\)/);
  cluster.schedulingPolicy = cluster.SCHED_RR;
  assert.equal(new HeldSockets({ log, wantedKeys: () => [], nodeVersion: '20.19.2' }).enabled(), false);
  assert.equal(warnings.length, 1, 'rr is no reason for a warning');
});

test('HeldSockets: keeps the first socket per wanted key, gives it to new workers, lets go on keepOnly', () => {
  const closed = [];
  const handle = (name) => ({ name, close: () => closed.push(name) });
  const sent = [];
  let wanted = ['*:80', '*:443'];
  const held = new HeldSockets({ log: { warn: () => {} }, wantedKeys: () => wanted });
  const worker = { process: { pid: 1 }, send: (message, h, callback) => { sent.push([message.key, h.name]); callback(null); } };
  const report = (key, h) => held.keep({ type: 'listening-socket', key }, h);
  report('*:80', handle('a'));
  report('*:80', handle('b')); // a second worker bound the same socket at start: its copy is closed
  report('*:8080', handle('c')); // not configured (any more): closed
  report('*:443', handle('d'));
  assert.deepEqual(closed, ['b', 'c']);
  held.giveTo(worker);
  assert.deepEqual(sent, [['*:80', 'a'], ['*:443', 'd']]);
  wanted = ['*:443'];
  held.keepOnly(wanted);
  assert.deepEqual(closed, ['b', 'c', 'a']);
  held.closeAll();
  assert.deepEqual(closed, ['b', 'c', 'a', 'd']);
});

test('HeldSockets never throws: a failing send or close is a warning', () => {
  const warnings = [];
  const held = new HeldSockets({ log: { warn: (line) => warnings.push(line) }, wantedKeys: () => ['*:80'] });
  const worker = { process: { pid: 7 }, send: () => { throw new Error('channel closed'); } };
  held.keep({ type: 'listening-socket', key: '*:80' }, { close: () => { throw new Error('EBADF'); } });
  held.giveTo(worker);
  // A send that fails later reports to its callback (without one, Node would emit 'error').
  held.giveTo({ process: { pid: 8 }, send: (message, handle, callback) => callback(new Error('EPIPE')) });
  held.closeAll();
  assert.equal(warnings.length, 3);
  assert.match(warnings[0], /cannot give worker 7 the listening socket of \*:80: channel closed/);
  assert.match(warnings[1], /cannot give worker 8 the listening socket of \*:80: EPIPE/);
  assert.match(warnings[2], /cannot close the listening socket of \*:80: EBADF/);
});

test('HeldSockets.adopt: sockets a previous primary left with systemd are held when configured, the rest closed and named', (t) => {
  const policy = cluster.schedulingPolicy;
  t.after(() => { cluster.schedulingPolicy = policy; });
  const closed = [];
  const handle = (name) => ({ name, close: () => closed.push(name) });
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const held = new HeldSockets({ log: { warn: () => {} }, wantedKeys: () => ['*:80'], nodeVersion: '20.19.2' });
  const dropped = held.adopt(new Map([['*:80', handle('kept')], ['*:8080', handle('old port')]]));
  assert.deepEqual(dropped, ['*:8080']);
  assert.deepEqual(closed, ['old port']);
  assert.equal(held.handles.get('*:80').name, 'kept');
  assert.deepEqual(held.keepOnly([]), ['*:80'], 'keepOnly names what it lets go');
  cluster.schedulingPolicy = cluster.SCHED_RR;
  const rr = new HeldSockets({ log: { warn: () => {} }, wantedKeys: () => ['*:80'], nodeVersion: '20.19.2' });
  assert.deepEqual(rr.adopt(new Map([['*:80', handle('rr')]])), ['*:80'], 'with "rr" nothing is held: the port is bound anew');
  assert.equal(rr.handles.size, 0);
});
