'use strict';
// runner.js: the stage list's order, errors to one place, and nothing after an answer.
const test = require('node:test');
const assert = require('node:assert/strict');
const { runStages } = require('../../lib/pipeline/runner');
const { startPipeline } = require('../support/pipeline');
const { request } = require('../support/helpers');

// A response as far as the runner looks at it.
const fakeResponse = () => ({ headersSent: false, writableEnded: false });

test('stages run in order until one answers', () => {
  const ran = [];
  const res = fakeResponse();
  runStages([
    (req, r, next) => { ran.push('a'); next(); },
    (req, r, next) => { ran.push('b'); r.headersSent = true; r.writableEnded = true; },
    () => { ran.push('c'); },
  ], () => assert.fail('no error'))({}, res);
  assert.deepEqual(ran, ['a', 'b']);
});

test('a stage that answers and then calls next() runs no later stage', () => {
  const ran = [];
  for (const answered of [{ headersSent: true, writableEnded: false }, { headersSent: true, writableEnded: true }]) {
    runStages([
      (req, r, next) => { Object.assign(r, answered); next(); },
      () => { ran.push('later'); },
    ], () => assert.fail('no error'))({}, fakeResponse());
  }
  assert.deepEqual(ran, []);
});

test('next(error) after an answer still reaches onError (which may cut the connection)', () => {
  const errors = [];
  runStages([
    (req, r, next) => { r.headersSent = true; next(new Error('late')); },
    () => assert.fail('not run'),
  ], (req, r, error) => errors.push(error.message))({}, fakeResponse());
  assert.deepEqual(errors, ['late']);
});

test('a throw and a rejection go to onError', async () => {
  const errors = [];
  const onError = (req, r, error) => errors.push(error.message);
  runStages([() => { throw new Error('thrown'); }], onError)({}, fakeResponse());
  runStages([async () => { throw new Error('rejected'); }], onError)({}, fakeResponse());
  await new Promise(setImmediate);
  assert.deepEqual(errors, ['thrown', 'rejected']);
});

test('req.svr.clientAddress is the peer when no proxy key is set, for scripts as for the stages', async () => {
  const site = await startPipeline({
    config: { blacklist: ['192.0.2.1'] },
    files: { 'serverSideScript.js': 'res.end(String(req.svr.clientAddress));' },
  });
  try {
    const res = await request(`${site.url}/`);
    assert.equal(res.status, 200);
    assert.match(res.text, /^(::ffff:)?127\.0\.0\.1$/);
  } finally {
    await site.stop();
  }
});
