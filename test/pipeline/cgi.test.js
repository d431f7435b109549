'use strict';
// CGI scripts, a process per request: shell and Perl scripts in /cgi-bin/, scripts by extension
// through an interpreter, the time limit that kills the whole process group, and the bound on
// scripts running at once.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { startPipeline } = require('../support/pipeline');
const { request, waitUntil, isAlive, ensureDebianPackage, makeTempDir } = require('../support/helpers');

const SHELL = `#!/bin/sh
if [ "$PATH_INFO" = "/missing" ]; then
  printf 'Status: 404 Not Here\\r\\nContent-Type: text/plain\\r\\n\\r\\nnothing here\\n'
  exit 0
fi
printf 'Content-Type: text/plain\\r\\nX-Cgi: shell\\r\\n\\r\\n'
echo "method=$REQUEST_METHOD query=$QUERY_STRING info=$PATH_INFO script=$SCRIPT_NAME proxy=\${HTTP_PROXY-unset}"
if [ -n "$CONTENT_LENGTH" ]; then echo "body=$(head -c "$CONTENT_LENGTH")"; fi
echo "oops from the shell script" >&2
`;

const WHO = `#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
echo "uid=$(id -u) cwd=$(pwd)"
`;

const PERL = `#!/usr/bin/perl
use strict;
my $body = '';
read(STDIN, $body, $ENV{CONTENT_LENGTH}) if $ENV{CONTENT_LENGTH};
if (($ENV{QUERY_STRING} // '') eq 'gone') { print "Status: 404 Not Found\\r\\nContent-Type: text/plain\\r\\n\\r\\ngone\\n"; exit 0; }
print "Content-Type: text/plain\\r\\nX-Cgi: perl\\r\\nSet-Cookie: a=1\\r\\nSet-Cookie: b=2\\r\\n\\r\\n";
print "perl $ENV{REQUEST_METHOD} $ENV{QUERY_STRING} body=$body\\n";
`;

const FOREVER = `#!/bin/sh
sleep 1000 &
echo "$$ $!" > "$PIDS"
printf 'Content-Type: text/plain\\r\\n\\r\\n'
exec sleep 1000
`;

const HOST = `#!/bin/sh
printf 'Content-Type: text/plain\\r\\n\\r\\n'
echo "name=$SERVER_NAME host=$HTTP_HOST uri=$REQUEST_URI"
`;

function executable(site, files) {
  for (const name of files) fs.chmodSync(path.join(site.root, name), 0o755);
}

test('shell and Perl scripts in /cgi-bin/: GET, POST, Status: 404, headers, stderr to the log', async (t) => {
  const perl = ensureDebianPackage('perl');
  const site = await startPipeline({
    config: { cgi: [{ path: '/cgi-bin/' }] },
    files: { 'cgi-bin/hello.sh': SHELL, 'cgi-bin/hello.pl': PERL, 'cgi-bin/plain.txt': 'not executable', 'cgi-bin/sub/x.sh': SHELL, 'cgi-bin/tools/who.sh': WHO },
  });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/hello.sh', 'cgi-bin/hello.pl', 'cgi-bin/tools/who.sh']);

  const who = await request(`${site.url}/cgi-bin/tools/who.sh`);
  assert.equal(who.text, `uid=${process.getuid()} cwd=${path.join(site.root, 'cgi-bin/tools')}\n`, 'svr\'s user, in the script\'s directory');

  const get = await request(`${site.url}/cgi-bin/hello.sh/a/b?x=1&y=2`, { headers: { proxy: 'http://evil.example' } });
  assert.equal(get.status, 200);
  assert.equal(get.headers['x-cgi'], 'shell');
  assert.equal(get.text, 'method=GET query=x=1&y=2 info=/a/b script=/cgi-bin/hello.sh proxy=unset\n');
  await site.waitForLog(/error cgi \/cgi-bin\/: \/cgi-bin\/hello\.sh\/a\/b\?x=1&y=2: oops from the shell script/);

  const post = await request(`${site.url}/cgi-bin/hello.sh`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'posted words' });
  assert.equal(post.text, 'method=POST query= info= script=/cgi-bin/hello.sh proxy=unset\nbody=posted words\n');

  const missing = await request(`${site.url}/cgi-bin/hello.sh/missing`);
  assert.equal(missing.status, 404);
  assert.equal(missing.text, 'nothing here\n');

  if (!perl.skip) {
    const pl = await request(`${site.url}/cgi-bin/hello.pl?q=1`, { method: 'POST', body: 'abc', headers: { 'content-type': 'text/plain' } });
    assert.equal(pl.status, 200);
    assert.equal(pl.headers['x-cgi'], 'perl');
    assert.deepEqual(pl.headers['set-cookie'], ['a=1', 'b=2']);
    assert.equal(pl.text, 'perl POST q=1 body=abc\n');
    const gone = await request(`${site.url}/cgi-bin/hello.pl?gone`);
    assert.equal(gone.status, 404);
    assert.equal(gone.text, 'gone\n');
  }

  // Nothing in the script directory is ever sent as a file.
  assert.equal((await request(`${site.url}/cgi-bin/plain.txt`)).status, 403, 'not executable');
  assert.equal((await request(`${site.url}/cgi-bin/sub/x.sh`)).status, 403, 'not executable either');
  for (const url of ['/cgi-bin/', '/cgi-bin', '/cgi-bin/sub/', '/cgi-bin/nothing']) {
    const res = await request(site.url + url);
    assert.equal(res.status, 404, url);
    assert.ok(!res.text.includes('#!/bin/sh'), url);
  }
});

test('a character split between two reads of the script\'s stderr reaches the log whole', async (t) => {
  const dir = makeTempDir();
  const fifo = path.join(dir, 'go');
  execFileSync('mkfifo', [fifo]);
  // "é" is \303\251: the first byte goes out with a line svr logs, the second only once the test
  // has seen that line, so the two are read apart.
  const script = `#!/bin/sh
printf 'ready\\n\\303' >&2
read go < '${fifo}'
printf '\\251 end\\n' >&2
printf 'Content-Type: text/plain\\r\\n\\r\\nok'
`;
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/', timeout: 10000 }] }, files: { 'cgi-bin/split.sh': script } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/split.sh']);
  const answer = request(`${site.url}/cgi-bin/split.sh`);
  await site.waitForLog(/error cgi \/cgi-bin\/: \/cgi-bin\/split\.sh: ready$/);
  await fs.promises.writeFile(fifo, 'go\n');
  assert.equal((await answer).text, 'ok');
  await site.waitForLog(/: \/cgi-bin\/split\.sh: (?!ready)/);
  assert.deepEqual(site.stderr().filter((line) => line.includes('split.sh: ')).map((line) => line.replace(/^.*split\.sh: /, '')), ['ready', '\u00e9 end']);
});

test('at most 64 KiB of a script\'s stderr per request reaches the log, the rest is dropped', async (t) => {
  // 100 KiB of 17-byte lines: the 64 KiB end after 3855 lines and the "a" of the next.
  const script = `#!/bin/sh\nyes 'a line of stderr' | head -c 102400 >&2\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok'\n`;
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/' }] }, files: { 'cgi-bin/flood.sh': script } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/flood.sh']);
  const since = site.stderr().length;
  assert.equal((await request(`${site.url}/cgi-bin/flood.sh`)).text, 'ok');
  await site.waitForLog(/: \/cgi-bin\/flood\.sh: a$/, 'stderr', since); // the cut line, written at the script's end
  const prefix = /^error cgi \/cgi-bin\/: \/cgi-bin\/flood\.sh: /;
  const logged = site.stderr().slice(since).filter((line) => prefix.test(line)).map((line) => line.replace(prefix, ''));
  assert.equal(logged.join('\n'), 'a line of stderr\n'.repeat(6100).slice(0, 64 * 1024));
  assert.equal(logged.length, 3856);
});

test('scripts by extension through an interpreter, with a local redirect', async (t) => {
  const perl = ensureDebianPackage('perl');
  if (perl.skip) return t.skip(perl.skip);
  const site = await startPipeline({
    config: { cgi: [{ extensions: ['.pl'], interpreter: [perl.path] }] },
    files: {
      'app/hello.pl': PERL, // not executable: the interpreter runs it
      'app/go.pl': 'print "Location: /target.txt\\n\\n";',
      'target.txt': 'the target\n',
    },
  });
  t.after(() => site.stop());
  const res = await request(`${site.url}/app/hello.pl?z=9`);
  assert.equal(res.status, 200);
  assert.equal(res.text, 'perl GET z=9 body=\n');
  const go = await request(`${site.url}/app/go.pl`);
  assert.equal(go.status, 200);
  assert.equal(go.text, 'the target\n');
  // A POST redirected locally is answered with GET (RFC 3875 6.2.2) and logged as what was asked.
  const posted = await request(`${site.url}/app/go.pl`, { method: 'POST', body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  assert.equal(posted.status, 200);
  assert.equal(posted.text, 'the target\n');
  await site.waitForLog(/"POST \/app\/go\.pl HTTP\/1\.1" 200 11 /, 'stdout');
  const source = await request(`${site.url}/app/missing.pl`);
  assert.equal(source.status, 404);
});

test('a script that never exits is killed at the time limit, with everything it started', async (t) => {
  const pids = path.join(makeTempDir(), 'pids');
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/', timeout: 500, env: { PIDS: pids } }] }, files: { 'cgi-bin/forever.sh': FOREVER } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/forever.sh']);
  const started = Date.now();
  // The headers went out before the limit: the response is cut, not answered 504.
  await assert.rejects(request(`${site.url}/cgi-bin/forever.sh`), /aborted|socket hang up|ECONNRESET/);
  assert.ok(Date.now() - started >= 450, 'not before the limit');
  const [script, background] = fs.readFileSync(pids, 'utf8').trim().split(' ').map(Number);
  assert.ok(await waitUntil(() => !isAlive(script) && !isAlive(background), 5000), 'the script and its background child are gone');
  await site.waitForLog(/warn cgi \/cgi-bin\/: GET \/cgi-bin\/forever\.sh: still running after 500 ms: killed; response cut/);
});

test('a script\'s process group is killed when it exits and when the client goes away', async (t) => {
  const dir = makeTempDir();
  const site = await startPipeline({
    config: { cgi: [{ path: '/cgi-bin/', env: { PIDS: path.join(dir, 'pids') } }] },
    files: {
      'cgi-bin/leaves.sh': `#!/bin/sh\nsleep 1000 &\necho $! > "$PIDS.leaves"\nprintf 'Content-Type: text/plain\\r\\n\\r\\ndone'\n`,
      'cgi-bin/forever.sh': FOREVER,
    },
  });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/leaves.sh', 'cgi-bin/forever.sh']);
  assert.equal((await request(`${site.url}/cgi-bin/leaves.sh`)).text, 'done');
  const left = Number(fs.readFileSync(path.join(dir, 'pids.leaves'), 'utf8'));
  assert.ok(await waitUntil(() => !isAlive(left), 5000), 'what it left running is gone');

  const req = http.get(`${site.url}/cgi-bin/forever.sh`);
  req.on('error', () => {});
  await new Promise((resolve) => req.once('response', resolve));
  const [script, background] = fs.readFileSync(path.join(dir, 'pids'), 'utf8').trim().split(' ').map(Number);
  assert.ok(isAlive(script) && isAlive(background));
  req.destroy();
  assert.ok(await waitUntil(() => !isAlive(script) && !isAlive(background), 5000), 'the client went away: the script went too');
});

test('a request waiting for a slot waits within the time limit', async (t) => {
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/', timeout: 400, maxProcesses: 1 }] }, files: { 'cgi-bin/silent.sh': '#!/bin/sh\nexec sleep 1000\n' } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/silent.sh']);
  const [first, second] = await Promise.all([request(`${site.url}/cgi-bin/silent.sh`), request(`${site.url}/cgi-bin/silent.sh?2`)]);
  assert.equal(first.status, 504);
  assert.equal(second.status, 504);
});

test('a silent script gets 504 at the limit', async (t) => {
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/', timeout: 300 }] }, files: { 'cgi-bin/silent.sh': '#!/bin/sh\nexec sleep 1000\n' } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/silent.sh']);
  const res = await request(`${site.url}/cgi-bin/silent.sh`);
  assert.equal(res.status, 504);
});

test('200 concurrent requests: all answered, never more than maxProcesses scripts at once', async (t) => {
  const site = await startPipeline({
    config: { cgi: [{ path: '/cgi-bin/', maxProcesses: 4, timeout: 120000 }] },
    files: {
      'cgi-bin/count.sh': `#!/bin/sh
dir="$DOCUMENT_ROOT/../running"
touch "$dir/$$"
ls "$dir" | wc -l >> "$DOCUMENT_ROOT/../counts"
sleep 0.02
rm "$dir/$$"
printf 'Content-Type: text/plain\\r\\n\\r\\nok'
`,
    },
  });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/count.sh']);
  fs.mkdirSync(path.join(site.dir, 'running'));
  const agent = new http.Agent({ keepAlive: false, maxSockets: 200 });
  const all = await Promise.all(Array.from({ length: 200 }, () => request(`${site.url}/cgi-bin/count.sh`, { agent, timeout: 120000 })));
  assert.deepEqual(all.map((r) => r.status), Array(200).fill(200));
  const counts = fs.readFileSync(path.join(site.dir, 'counts'), 'utf8').trim().split('\n').map(Number);
  assert.equal(counts.length, 200);
  const most = Math.max(...counts);
  assert.ok(most <= 4, `at most 4 scripts at once (saw ${most})`);
  assert.ok(most >= 2, `scripts did run side by side (saw ${most})`);
});

test('php-cgi as a CGI interpreter for .php', async (t) => {
  const php = ensureDebianPackage('php-cgi');
  if (php.skip) return t.skip(php.skip);
  const site = await startPipeline({
    config: { cgi: [{ extensions: ['.php'], interpreter: [php.path] }] },
    files: { 'hello.php': '<?php setcookie("c", "1"); echo "php-cgi says ", $_GET["x"] ?? "", " ", $_SERVER["SCRIPT_NAME"];' },
  });
  t.after(() => site.stop());
  const res = await request(`${site.url}/hello.php?x=hi`);
  assert.equal(res.status, 200);
  assert.equal(res.text, 'php-cgi says hi /hello.php');
  assert.deepEqual(res.headers['set-cookie'], ['c=1']);
});

test('a program that cannot start: 502 with the reason in the log, and its slot is free again', async (t) => {
  const site = await startPipeline({ config: { cgi: [{ extensions: ['.py'], interpreter: ['/nonexistent/python9'], maxProcesses: 1 }] }, files: { 'x.py': 'print(1)' } });
  t.after(() => site.stop());
  for (let i = 0; i < 3; i++) assert.equal((await request(`${site.url}/x.py`)).status, 502);
  await site.waitForLog(/warn cgi \.py: GET \/x\.py: cannot start: ENOENT; answering 502/);
});

test('an absolute-form target\'s authority is SERVER_NAME and HTTP_HOST, whatever Host says; REQUEST_URI its path', async (t) => {
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/' }] }, files: { 'cgi-bin/host.sh': HOST } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/host.sh']);
  const answer = await request(site.url, { path: 'http://App.example:8080/cgi-bin/host.sh?q=1', headers: { host: 'other.example' } });
  assert.equal(answer.text, 'name=app.example host=App.example:8080 uri=/cgi-bin/host.sh?q=1\n');
});

// A CGI script's environment is built as a FastCGI server's params are: a header name PHP (as
// php-cgi) would read as another (X.Forwarded.For as X-Forwarded-For) reaches no script.
test('header names with a character other than letters, digits and "-" reach no CGI script: no X.Forwarded.For as HTTP_X_FORWARDED_FOR', async (t) => {
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/' }] }, files: { 'cgi-bin/env.sh': "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nenv\n" } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/env.sh']);
  const spoofed = { 'X.Forwarded.For': '1.2.3.4', 'X-Real.IP': '1.2.3.4', 'X-Forwarded.Proto': 'https', 'X-Forwarded.Host': 'evil.example', 'X_Forwarded_For': '1.2.3.4', 'X~Y': '1' };
  const answer = await request(`${site.url}/cgi-bin/env.sh`, { headers: { ...spoofed, 'X-Normal-Header': 'kept', connection: 'close' } });
  assert.equal(answer.status, 200);
  // dash passes on no variable whose name has a "." (HTTP_X.FORWARDED.FOR): X_Forwarded_For is the
  // name that would show here, as HTTP_X_FORWARDED_FOR.
  const passed = answer.text.split('\n').filter((line) => line.startsWith('HTTP_')).sort();
  assert.deepEqual(passed, ['HTTP_CONNECTION=close', `HTTP_HOST=${new URL(site.url).host}`, 'HTTP_X_NORMAL_HEADER=kept']);
});

// The body is read whole before the script starts (requestBuffering): a client uploading slowly
// holds no process and no slot. With one slot, a request beside an unfinished upload is answered
// while the upload still waits; without buffering it would wait for the upload's time limit.
test('with one slot, a request beside a slow upload is answered; the upload reaches its script whole; maxBodySize 413', async (t) => {
  const { bytesInMemory } = require('../../lib/pipeline/upstream/request-body');
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/', timeout: 10000, maxProcesses: 1, maxBodySize: 100000 }] }, files: { 'cgi-bin/echo.sh': SHELL } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/echo.sh']);
  const net = require('node:net');
  const slow = net.connect(site.port, '127.0.0.1');
  let answer = '';
  slow.setEncoding('latin1');
  slow.on('data', (chunk) => { answer += chunk; });
  slow.on('error', () => {});
  const closed = new Promise((resolve) => slow.on('close', resolve));
  t.after(() => slow.destroy());
  slow.write('POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 10\r\n\r\nhello');
  assert.ok(await waitUntil(() => bytesInMemory() === 5, 5000), 'svr is reading the upload');
  const other = await request(`${site.url}/cgi-bin/echo.sh?other`);
  assert.equal(other.status, 200);
  assert.match(other.text, /query=other/);
  assert.equal(answer, '', 'the upload is still waiting for the rest of its body');
  slow.write('world');
  await closed;
  assert.match(answer, /^HTTP\/1\.1 200 [^]*body=helloworld/);
  const large = await new Promise((resolve) => { // the head alone: svr answers without the body
    const socket = net.connect(site.port, '127.0.0.1', () => socket.write('POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\nContent-Length: 100001\r\n\r\n'));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { text += chunk; });
    socket.on('close', () => resolve(text));
  });
  assert.match(large, /^HTTP\/1\.1 413 /);
  await site.waitForLog(/warn cgi \/cgi-bin\/: POST \/cgi-bin\/echo\.sh: a body of 100001 bytes, over maxBodySize \(100000\); answering 413/);
});

// The body file cut short while its request waits for the one slot: the script must not be left
// waiting for the rest of its stdin until the time limit.
test('a body file that cannot be read back whole: 500 and the reason in the log, not a script left waiting for its stdin', async (t) => {
  const { bodyFileLinks, openBodyFiles } = require('../support/body-files');
  const tmp = makeTempDir();
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = tmp; // os.tmpdir(): where svr puts body files
  t.after(() => { if (previous === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = previous; });
  const release = path.join(tmp, 'release');
  const WAIT = `#!/bin/sh\n: > "$RELEASE.started"\nwhile [ ! -e "$RELEASE" ]; do sleep 0.02; done\nprintf 'Content-Type: text/plain\\r\\n\\r\\nreleased\\n'\n`;
  // Reads its whole body before it writes a byte, as most scripts do (then svr can still answer 500).
  const LENGTH = `#!/bin/sh\nlength=$(head -c "$CONTENT_LENGTH" | wc -c)\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s\\n' "$length"\n`;
  const site = await startPipeline({
    config: { cgi: [{ path: '/cgi-bin/', timeout: 60000, maxProcesses: 1, env: { RELEASE: release } }] },
    files: { 'cgi-bin/wait.sh': WAIT, 'cgi-bin/length.sh': LENGTH },
  });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/wait.sh', 'cgi-bin/length.sh']);
  const first = request(`${site.url}/cgi-bin/wait.sh`);
  assert.ok(await waitUntil(() => fs.existsSync(`${release}.started`), 5000), 'the first script holds the slot');
  const size = 3 * 1024 * 1024;
  const upload = request(`${site.url}/cgi-bin/length.sh`, { method: 'POST', headers: { 'content-length': size }, body: Buffer.alloc(size, 'a'), timeout: 30000 });
  const whole = () => bodyFileLinks().filter((link) => fs.statSync(link).size === size);
  assert.ok(await waitUntil(() => whole().length === 1, 5000), 'the body is in its file, waiting for the slot');
  fs.truncateSync(whole()[0], 1000);
  fs.writeFileSync(release, '');
  assert.equal((await first).text, 'released\n');
  assert.equal((await upload).status, 500);
  await site.waitForLog(/the buffered request body could not be read/);
  assert.ok(await waitUntil(() => openBodyFiles().length === 0, 5000), 'the file is closed');
});

// Sends a POST head and the first bytes of its body, then waits; `answer()` is what came back so
// far, `closed` resolves with all of it once the connection closes.
function partialPost(port, pathname, declared, first) {
  const net = require('node:net');
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST ${pathname} HTTP/1.1\r\nHost: x\r\nContent-Length: ${declared}\r\n\r\n${first}`, () => resolve({ socket, answer: () => text, closed }));
    });
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => { text += chunk; });
    socket.on('error', () => {});
    const closed = new Promise((done) => socket.on('close', () => done(text)));
  });
}

// Marks its start in $MARK, then answers with the length of its body.
const MARKS_START = `#!/bin/sh\n: > "$MARK"\nlength=$(head -c "$CONTENT_LENGTH" | wc -c)\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s\\n' "$length"\n`;

test('requestBuffering false: the script starts before its body is whole, and reads it as it arrives', async (t) => {
  const mark = path.join(makeTempDir(), 'started');
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/', requestBuffering: false, env: { MARK: mark } }] }, files: { 'cgi-bin/length.sh': MARKS_START } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/length.sh']);
  const upload = await partialPost(site.port, '/cgi-bin/length.sh', 10, 'hello');
  t.after(() => upload.socket.destroy());
  assert.ok(await waitUntil(() => fs.existsSync(mark), 5000), 'the script started with half of its body sent');
  upload.socket.write('world');
  // The answer is chunked (no Content-Length from the script): its one chunk is "10\n".
  assert.ok(await waitUntil(() => /\r\n\r\n3\r\n10\n\r\n0\r\n\r\n$/.test(upload.answer()), 5000), `the whole body read: ${JSON.stringify(upload.answer())}`);
  assert.match(upload.answer(), /^HTTP\/1\.1 200 /);
});

test('requestBuffering (the default): timeout counts the body\'s reading; a body that never comes whole gets 504 and starts no script', async (t) => {
  const mark = path.join(makeTempDir(), 'started');
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/', timeout: 500, env: { MARK: mark } }] }, files: { 'cgi-bin/length.sh': MARKS_START } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/length.sh']);
  const upload = await partialPost(site.port, '/cgi-bin/length.sh', 10, 'hello');
  t.after(() => upload.socket.destroy());
  assert.ok(await waitUntil(() => /^HTTP\/1\.1 504 /.test(upload.answer()), 10000), `504 at the time limit: ${JSON.stringify(upload.answer().slice(0, 40))}`);
  assert.equal(fs.existsSync(mark), false, 'no script started');
});

test('a chunked request body gets 411 from a CGI rule, as from a FastCGI one', async (t) => {
  const site = await startPipeline({ config: { cgi: [{ path: '/cgi-bin/' }] }, files: { 'cgi-bin/echo.sh': SHELL } });
  t.after(() => site.stop());
  executable(site, ['cgi-bin/echo.sh']);
  const res = await request(`${site.url}/cgi-bin/echo.sh`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' }, body: 'hello' });
  assert.equal(res.status, 411);
});
