'use strict';
// Headers that name the client's address reach the upstream only from a trusted proxy. Besides
// X-Forwarded-For/-Proto/-Host and Forwarded (replaced by svr's own), that is X-Real-IP, and any
// header whose name becomes one of them when "_" is read as "-" (CGI/WSGI environments and some
// frameworks do): those are never forwarded, from anyone.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { once } = require('node:events');
const { startPipeline } = require('../../support/pipeline');

async function headerEchoUpstream() {
  const up = http.createServer((req, res) => res.end(JSON.stringify(req.headers)));
  up.listen(0, '127.0.0.1');
  await once(up, 'listening');
  return up;
}

function seenByUpstream(port, localAddress, headers) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/api/x', localAddress, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve(JSON.parse(body)));
    });
    req.on('error', reject);
    req.end();
  });
}

const FORGED = {
  'X_Forwarded_For': '6.6.6.6',
  'x-forwarded_for': '6.6.6.6',
  'X_Forwarded_Host': 'evil.example',
  'X_Forwarded_Proto': 'https',
  'Forwarded_': 'ignored',
  'X-Real-IP': '6.6.6.6',
  'X_Real_IP': '6.6.6.6',
  'X-Forwarded-For': '6.6.6.6',
  'X-Other_Name': 'kept',
};

test('X-Real-IP and "_" spellings of forwarding headers: dropped from untrusted clients; only X-Real-IP passes from a trusted proxy', async (t) => {
  const up = await headerEchoUpstream();
  t.after(() => up.close());
  const site = await startPipeline({
    config: { trustedProxies: ['127.0.0.2'], proxy: [{ path: '/api/', upstreams: [`http://127.0.0.1:${up.address().port}`] }] },
    asWorker: true,
  });
  t.after(() => site.stop());

  const untrusted = await seenByUpstream(site.port, '127.0.0.1', FORGED);
  assert.equal(untrusted['x-forwarded-for'], '127.0.0.1');
  for (const name of ['x_forwarded_for', 'x-forwarded_for', 'x_forwarded_host', 'x_forwarded_proto', 'x-real-ip', 'x_real_ip']) {
    assert.equal(untrusted[name], undefined, `${name} from an untrusted client`);
  }
  assert.equal(untrusted['x-other_name'], 'kept', 'other names with "_" pass');
  assert.equal(untrusted.forwarded_, 'ignored', '"forwarded_" is not "forwarded"');

  const trusted = await seenByUpstream(site.port, '127.0.0.2', FORGED);
  assert.equal(trusted['x-forwarded-for'], '6.6.6.6, 127.0.0.2');
  assert.equal(trusted['x-real-ip'], '6.6.6.6', 'a trusted proxy may set X-Real-IP');
  for (const name of ['x_forwarded_for', 'x-forwarded_for', 'x_forwarded_host', 'x_forwarded_proto', 'x_real_ip']) {
    assert.equal(trusted[name], undefined, `${name} from a trusted proxy`);
  }
});
