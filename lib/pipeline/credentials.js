'use strict';
// Checks HTTP Basic credentials against `users` (it enforces nothing itself: the access rules and
// the scripting stage ask it who the user is). Answers the name of the account whose password
// matches, else null; that name becomes req.svr.user (req.authUser for SVR.JS scripts).
// Accounts use SVR.JS's format (made by its svrpasswd.js): pass = hex of sha256(password + salt), or with "pbkdf2": true
// PBKDF2-HMAC-SHA512 (36250 iterations, 64 bytes), or with "scrypt": true scrypt (N=16384, 64 bytes).
//
// The slow hashes run on libuv's thread pool (crypto.pbkdf2/scrypt), never on the event loop;
// successful checks are remembered for an hour (as SVR.JS does) so a logged-in client costs one
// hash, not one per request. Unknown names are checked against a dummy account so that a wrong
// name takes as long as a wrong password.

// Required on the first login check: a site without auth never loads it (start-up time).
let cryptoModule = null;
const crypto = () => (cryptoModule ??= require('node:crypto'));

const PBKDF2_ITERATIONS = 36250;
const KEY_LENGTH = 64;
const CACHE_MS = 60 * 60 * 1000;
const CACHE_LIMIT = 1000;

function parseBasic(header) {
  if (typeof header !== 'string') return null;
  const match = /^\s*basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) return null;
  return { name: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function hash(user, password) {
  if (user.scrypt) {
    return new Promise((resolve, reject) => crypto().scrypt(password, user.salt, KEY_LENGTH, (e, key) => (e ? reject(e) : resolve(key.toString('hex')))));
  }
  if (user.pbkdf2) {
    return new Promise((resolve, reject) => crypto().pbkdf2(password, user.salt, PBKDF2_ITERATIONS, KEY_LENGTH, 'sha512', (e, key) => (e ? reject(e) : resolve(key.toString('hex')))));
  }
  return Promise.resolve(crypto().createHash('sha256').update(password + user.salt).digest('hex'));
}

function sameHex(a, b) {
  const left = Buffer.from(String(a).toLowerCase(), 'utf8');
  const right = Buffer.from(String(b).toLowerCase(), 'utf8');
  return left.length === right.length && crypto().timingSafeEqual(left, right);
}

// Returns authenticate(req) -> Promise<string|null>, or null when no account is configured.
function createAuthenticator(users) {
  if (!Array.isArray(users) || users.length === 0) return null;
  const byName = new Map(users.map((user) => [user.name, user]));
  const dummy = { name: '', salt: 'svr-dummy-salt', pass: '0'.repeat(64), pbkdf2: users.some((u) => u.pbkdf2), scrypt: false };
  const remembered = new Map(); // key -> expiry time

  return async function authenticate(req) {
    const credentials = parseBasic(req.headers.authorization);
    if (!credentials) return null;
    const user = byName.get(credentials.name);
    const account = user || dummy;
    const key = `${credentials.name}\0${crypto().createHash('sha256').update(credentials.password + account.salt).digest('hex')}`;
    const expiry = remembered.get(key);
    if (user && expiry !== undefined && expiry > Date.now()) return user.name;
    const computed = await hash(account, credentials.password);
    if (!user || !sameHex(computed, user.pass)) return null;
    if (remembered.size >= CACHE_LIMIT) remembered.delete(remembered.keys().next().value);
    remembered.set(key, Date.now() + CACHE_MS);
    return user.name;
  };
}

module.exports = { createAuthenticator, parseBasic };
