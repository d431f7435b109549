'use strict';
// PROXY protocol refusals are logged at most once per interval: the first at once (a
// misconfigured balancer shows up immediately), the rest summed up at the end of the interval
// with their count and the peers that sent most, so a flood of untrusted connections cannot
// flood the log.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { startPipeline } = require('../support/pipeline');
const { waitUntil } = require('../support/helpers');
const { summarisedWarnings, REFUSAL_LOG_INTERVAL_MS } = require('../../lib/net/summarised-log');

function connectAndWaitForClose(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.on('close', resolve);
  });
}

test('200 connections from an untrusted peer: one warning line, not 200', async (t) => {
  const server = await startPipeline({ config: { acceptProxyProtocol: true, trustedProxies: ['10.0.0.0/8'] }, files: { 'index.html': 'home' }, asWorker: true });
  t.after(() => server.stop());
  const refusals = () => server.stderr().filter((line) => /PROXY protocol/.test(line));
  for (let i = 0; i < 4; i++) await Promise.all(Array.from({ length: 50 }, () => connectAndWaitForClose(server.port)));
  assert.equal(refusals().length, 1, refusals().join('\n'));
  assert.match(refusals()[0], /PROXY protocol: connection from 127\.0\.0\.1, which is not in trustedProxies: closed/);
  assert.ok(REFUSAL_LOG_INTERVAL_MS >= 1000, 'the interval a flood is summed up over');
});

test('the summary line: how many were not logged, and from which peers most', async () => {
  const lines = [];
  const warn = summarisedWarnings({ warn: (line) => lines.push(line) }, { intervalMs: 100, label: 'PROXY protocol' });
  warn('10.0.0.1', 'connection from 10.0.0.1: refused');
  for (let i = 0; i < 30; i++) warn('10.0.0.2', 'connection from 10.0.0.2: refused');
  for (let i = 0; i < 20; i++) warn('10.0.0.3', 'connection from 10.0.0.3: refused');
  warn('10.0.0.1', 'connection from 10.0.0.1: refused');
  assert.deepEqual(lines, ['PROXY protocol: connection from 10.0.0.1: refused']);
  assert.ok(await waitUntil(() => lines.length === 2, 2000), lines.join('\n'));
  assert.equal(lines[1], 'PROXY protocol: 51 more such refusals in the last 100 ms (10.0.0.2: 30, 10.0.0.3: 20, 10.0.0.1: 1)');
  // a quiet interval later, the next one is logged at once again
  await new Promise((resolve) => setTimeout(resolve, 150));
  warn('10.0.0.4', 'connection from 10.0.0.4: refused');
  assert.equal(lines[2], 'PROXY protocol: connection from 10.0.0.4: refused');
});
