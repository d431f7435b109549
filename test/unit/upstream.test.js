'use strict';
// lib/pipeline/upstream/ without sockets: a second protocol plugs in as a transport and inherits
// picking, retries and passive and active health (test/proxy.test.js runs the HTTP transport
// against real upstreams).

const test = require('node:test');
const assert = require('node:assert/strict');
const { parseUpstream, createUpstream, UpstreamPool, tryUpstreams, TRANSPORTS } = require('../../lib/pipeline/upstream');

// A transport that answers from a script: send() fails the upstreams named in `down`.
function fakeTransport(down = new Set()) {
  const sent = [];
  const checks = [];
  return {
    name: 'fake', schemes: ['fake:'], expected: 'fake:NAME',
    sent, checks,
    parse: (text) => (text.length > 5 ? { label: text } : { error: 'expected fake:NAME' }),
    connection: (target) => ({ opened: target.label }),
    check(upstream, check, headers, settle) { checks.push([upstream.label, check.path, headers]); settle(!down.has(upstream.label)); },
    send(req, res, upstream, exchange, onFailure) {
      sent.push(upstream.label);
      if (down.has(upstream.label)) return onFailure({ status: 502, reason: 'refused', beforeRequestSent: true, countsAgainstUpstream: true });
      return res.answer(upstream.label);
    },
  };
}

const passive = { maxFails: 1, failTimeout: 10000 };
const poolOf = (transport, labels, options = {}) => new UpstreamPool(
  labels.map((label) => createUpstream({ transport, target: { label } }, { verifyTLS: true, idleMs: 1000 })),
  { balance: 'round-robin', passive, check: null, ...options },
);

function exchange(pool, { method = 'GET', retries = 1, headers = {} } = {}) {
  const logged = [];
  const res = { headersSent: false, destroyed: false, answered: null, answer(label) { this.answered = label; } };
  let error = null;
  const req = { method, url: '/x', httpVersionMajor: 1, headers };
  tryUpstreams(req, res, { pool, retries, log: { warn: (line) => logged.push(line) }, sendError: (rq, rs, status) => { error = status; } }, (upstream, onFailure) => {
    upstream.transport.send(req, res, upstream, {}, onFailure);
  });
  return { answered: res.answered, error, logged };
}

test('parseUpstream: the HTTP transport takes http, https and unix; other schemes are refused naming what is accepted', () => {
  assert.deepEqual(TRANSPORTS.map((t) => t.name), ['http']);
  const parsed = parseUpstream('http://127.0.0.1:8080/base/');
  assert.equal(parsed.transport.name, 'http');
  assert.equal(parsed.target.basePath, '/base');
  assert.equal(parseUpstream('unix:/run/app.sock').target.socketPath, '/run/app.sock');
  assert.match(parseUpstream('unix:run/app.sock').error, /must be absolute/);
  assert.match(parseUpstream('fcgi://127.0.0.1:9000').error, /expected an http:\/\/, https:\/\/ or unix:\/absolute\/path upstream/);
  const upstream = createUpstream(parseUpstream('https://example.com'), { verifyTLS: false, idleMs: 1000 });
  assert.equal(upstream.connection.agent.options.rejectUnauthorized, false);
  assert.equal(upstream.label, 'https://example.com');
});

test('a second transport plugs in: round robin, a failed upstream is retried elsewhere and taken out', () => {
  const transport = fakeTransport(new Set(['fake:b']));
  const pool = poolOf(transport, ['fake:a', 'fake:b', 'fake:c']);
  assert.equal(exchange(pool).answered, 'fake:a');
  const second = exchange(pool);
  assert.equal(second.answered, 'fake:c', 'b failed before the request was sent: retried on c');
  assert.deepEqual(transport.sent, ['fake:a', 'fake:b', 'fake:c']);
  assert.equal(pool.upstreams[1].isUp(), false, 'passive health took b out');
  assert.equal(exchange(pool).answered, 'fake:a');
  assert.equal(exchange(pool).answered, 'fake:c', 'b is skipped while it is out');
});

test('no retry for a request with a body, nor beyond `retries`: the failure is answered and logged', () => {
  const transport = fakeTransport(new Set(['fake:a', 'fake:b']));
  const withBody = exchange(poolOf(transport, ['fake:a', 'fake:b']), { method: 'POST', headers: { 'content-length': '3' } });
  assert.equal(withBody.error, 502);
  assert.equal(withBody.answered, null);
  assert.match(withBody.logged[0], /proxy: POST \/x -> fake:a: refused; answering 502/);
  const noRetries = exchange(poolOf(fakeTransport(new Set(['fake:a'])), ['fake:a', 'fake:b']), { retries: 0 });
  assert.equal(noRetries.error, 502);
});

test('active health checks run through the transport and take a failing upstream out until one passes', () => {
  const down = new Set(['fake:b']);
  const transport = fakeTransport(down);
  const pool = poolOf(transport, ['fake:a', 'fake:b'], { check: { path: '/health', interval: 60000, timeout: 100 } });
  pool.startChecks({ 'user-agent': 'svr-health-check' });
  pool.stopChecks();
  assert.deepEqual(transport.checks.map(([label, path]) => [label, path]), [['fake:a', '/health'], ['fake:b', '/health']]);
  assert.equal(pool.upstreams[0].isUp(), true);
  assert.equal(pool.upstreams[1].isUp(), false);
});
