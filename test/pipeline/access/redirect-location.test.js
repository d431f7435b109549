'use strict';
// Redirect rules never send a browser to another origin by accident. A regex rule's captures can
// come from the decoded path (when the raw URL does not match but the decoded one does), so a
// "%09" becomes a TAB in `Location`; browsers drop TAB, CR and LF while parsing, and "/\t/evil.com"
// is "//evil.com": another host. What goes into `Location` is percent-encoded (control characters,
// spaces, backslashes, non-ASCII), and a result whose origin differs from the rule's is refused.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startPipeline } = require('../../support/pipeline');

function rawGet(port, target) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => { received += chunk.toString('latin1'); });
    socket.on('end', () => {
      const [head] = received.split('\r\n\r\n');
      const status = Number(head.split(' ')[1]);
      const location = /\r\nLocation: ([^\r\n]*)/i.exec(head);
      resolve({ status, location: location ? location[1] : null, head });
    });
    socket.on('error', reject);
    socket.write(`GET ${target} HTTP/1.1\r\nHost: site.example\r\nConnection: close\r\n\r\n`);
  });
}

test('captures in Location are percent-encoded and a result on another origin is refused', async (t) => {
  const site = await startPipeline({
    config: {
      nonStandardCodes: [
        { regex: '/^\\/go\\/(.*)$/', scode: 302, location: '/$1' },
        { regex: '/^\\/ext\\/(.*)$/', scode: 302, location: 'https://example.com/$1' },
        { regex: '/^\\/sub(.*)$/', scode: 302, location: 'https://example.com$1' },
        { url: '/old', scode: 301, location: '/new' },
      ],
    },
    files: { 'index.html': 'home' },
  });
  t.after(() => site.stop());
  const cases = [
    ['/go/x', 302, '/x'],
    ['/go/%09/evil.com', 302, '/%09/evil.com'],
    ['/g%6f/%09/evil.com', 302, '/%09/evil.com'],
    ['/%67o/%09/evil.com', 302, '/%09/evil.com'],
    ['/g%6f/%09%09evil.com', 302, '/%09%09evil.com'],
    ['/g%6f/%20/evil.com', 302, '/%20/evil.com'],
    ['/g%6f/caf%C3%A9', 302, '/caf%C3%A9'],
    ['/ext/@evil.com', 302, 'https://example.com/@evil.com'],
    ['/ext/%09x', 302, 'https://example.com/%09x'],
    ['/sub/page', 302, 'https://example.com/page'],
    ['/sub.evil.com/', 400, null],
    ['/sub@evil.com/', 400, null],
    ['/old?a=1', 301, '/new?a=1'],
  ];
  for (const [target, status, location] of cases) {
    const answer = await rawGet(site.port, target);
    assert.equal(answer.status, status, `${target}: ${answer.head}`);
    assert.equal(answer.location, location, target);
  }
  // Whatever the form, no Location a browser resolves to another origin, no raw control or space.
  for (const target of ['/g%6f/%0d%0aX:y', '/g%6f/%5c%5cevil.com', '/g%6f/%5c/evil.com', '/go/%2f%2fevil.com', '/g%6f/%2f%2fevil.com', '/g%6f/%09%2f%2fevil.com', '/g%6f/%0b/evil.com']) {
    const { location, head } = await rawGet(site.port, target);
    if (location === null) continue;
    assert.doesNotMatch(location, /[\x00-\x20\x7f\\]/, `${target}: ${JSON.stringify(location)}`);
    assert.equal(new URL(location, 'https://site.example/').origin, 'https://site.example', `${target}: ${head}`);
  }
});
