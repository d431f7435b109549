'use strict';
// Child process for test/pipeline/symlink-race.test.js: swaps, in a loop and for a given time, a file
// and a parent directory below the web root for symbolic links to files outside it.
//   node symlink-racer.js <root> <outside> <seconds>
// Prints "racing" once the loop runs and "swaps N" at the end.

const fs = require('node:fs');
const path = require('node:path');

const [root, outside, seconds] = process.argv.slice(2);
// `node --test test/` runs every file below test/, this one too, without arguments: nothing to do.
if (seconds === undefined) process.exit(0);
const race = path.join(root, 'race');

// Replaces `at` by a symbolic link to `target` or by its regular counterpart `regular`, by rename,
// so the name always exists (a request sees one or the other, never a gap).
function swapFile(at, target, regular, toLink) {
  const tmp = `${at}.tmp`;
  try { fs.rmSync(tmp, { force: true }); } catch { /* gone */ }
  if (toLink) fs.symlinkSync(target, tmp);
  else fs.copyFileSync(regular, tmp);
  fs.renameSync(tmp, at);
}

// A directory cannot be renamed over a link: move the real one aside and put a link in its place.
function swapDir(at, target, aside, toLink) {
  if (toLink) {
    fs.renameSync(at, aside);
    fs.symlinkSync(target, at);
  } else {
    fs.unlinkSync(at);
    fs.renameSync(aside, at);
  }
}

const until = Date.now() + Number(seconds) * 1000;
let swaps = 0;
process.stdout.write('racing\n');
while (Date.now() < until) {
  const toLink = swaps % 2 === 0;
  swapFile(path.join(race, 'f.txt'), path.join(outside, 'secret.txt'), path.join(root, 'inside.txt'), toLink);
  swapFile(path.join(race, 'big.txt'), path.join(outside, 'big-secret.txt'), path.join(root, 'inside-big.txt'), toLink);
  swapFile(path.join(race, 'page.html'), path.join(outside, 'index.html'), path.join(root, 'inside.html'), toLink);
  swapDir(path.join(race, 'd'), outside, path.join(race, 'd-aside'), toLink);
  swaps++;
}
if (swaps % 2 === 1) swapDir(path.join(race, 'd'), outside, path.join(race, 'd-aside'), false);
process.stdout.write(`swaps ${swaps}\n`);
