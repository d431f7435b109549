'use strict';
// An admin who runs `svr check` without root meets a config they may not read (install.sh and the
// package make it root:svr 640: it may hold password hashes). Say so, and how to run the check,
// instead of a bare EACCES.

const fs = require('node:fs');

// A message when `file` exists but this user may not read it; null otherwise (a missing file or a
// parse error is the loader's to report).
function describeUnreadable(file, command) {
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return null;
  } catch (error) {
    if (error.code !== 'EACCES') return null;
  }
  let stat;
  try {
    stat = fs.statSync(file);
  } catch {
    return `${file}: permission denied (a directory on the way is closed to you). Run it as root: sudo ${command} --config ${file}`;
  }
  const readers = [`its owner ${nameOf('/etc/passwd', stat.uid)}`];
  if (stat.mode & 0o040) readers.push(`the group ${nameOf('/etc/group', stat.gid)}`);
  if (stat.mode & 0o004) readers.push('everyone');
  return `${file}: permission denied: the config is readable only by ${readers.join(' and ')} ` +
    `(mode ${(stat.mode & 0o777).toString(8)}; it may hold password hashes).\n` +
    `Run the check as root: sudo ${command} --config ${file}`;
}

// The name for a uid or gid, from /etc/passwd or /etc/group; the number when it is not there.
function nameOf(database, id) {
  try {
    for (const line of fs.readFileSync(database, 'utf8').split('\n')) {
      const fields = line.split(':');
      if (fields.length > 2 && Number(fields[2]) === id && fields[2] !== '') return fields[0];
    }
  } catch {}
  return String(id);
}

module.exports = { describeUnreadable };
