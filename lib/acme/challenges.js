'use strict';
// The challenge answers a worker gives, for the HTTP-01 stage and the TLS-ALPN-01 responder.
// The primary sends each worker the challenges it is answering now (add/remove); a challenge
// another host sharing the state directory asked for is read from acme/challenges/ there, so a
// CA that reaches any host behind the balancer gets the answer.
//
//   answers.http01(token, host) -> a promise of the key authorization, or of null (unknown
//                                  token, other host); the shared directory is read without
//                                  blocking the worker: any client may ask for any token
//   answers.alpnWanted() -> whether to look at ClientHellos for acme-tls/1 now (cheap: a memory
//                           check, and the shared directory at most once a second)
//   answers.alpnContext(servername) -> a SecureContext with the validation certificate, or null

const fs = require('node:fs');
const path = require('node:path');

const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;
const NAME = /^[a-z0-9.-]{1,253}$/;
const SHARED_LOOK_MS = 1000;

class ChallengeAnswers {
  constructor(acmeRoot) {
    this.dir = path.join(acmeRoot, 'challenges');
    this.http = new Map(); // token -> record
    this.alpn = new Map(); // identifier -> record
    this.contexts = new Map(); // identifier + key authorization -> SecureContext
    this.sharedAlpnAt = 0;
    this.sharedAlpn = false;
  }

  add(record) {
    if (record.type === 'http-01') this.http.set(record.token, record);
    else if (record.type === 'tls-alpn-01') this.alpn.set(record.identifier, record);
  }

  remove(record) {
    if (record.type === 'http-01') this.http.delete(record.token);
    else if (record.type === 'tls-alpn-01') {
      this.alpn.delete(record.identifier);
      this.contexts.delete(record.identifier);
    }
  }

  shared(type, id) {
    try {
      return JSON.parse(fs.readFileSync(this.sharedFile(type, id), 'utf8'));
    } catch {
      return null;
    }
  }

  async sharedAsync(type, id) {
    try {
      return JSON.parse(await fs.promises.readFile(this.sharedFile(type, id), 'utf8'));
    } catch {
      return null;
    }
  }

  sharedFile(type, id) {
    return path.join(this.dir, type, `${id}.json`);
  }

  async http01(token, host) {
    if (!TOKEN.test(token)) return null;
    const record = this.http.get(token) || await this.sharedAsync('http-01', token);
    if (!record || record.token !== token) return null;
    return record.identifier === String(host || '').toLowerCase() ? record.keyAuthorization : null;
  }

  alpnWanted() {
    if (this.alpn.size > 0) return true;
    const now = Date.now();
    if (now - this.sharedAlpnAt >= SHARED_LOOK_MS) {
      this.sharedAlpnAt = now;
      try {
        this.sharedAlpn = fs.readdirSync(path.join(this.dir, 'tls-alpn-01')).some((f) => f.endsWith('.json'));
      } catch {
        this.sharedAlpn = false;
      }
    }
    return this.sharedAlpn;
  }

  alpnContext(servername) {
    const name = String(servername || '').toLowerCase();
    if (!NAME.test(name)) return null;
    const record = this.alpn.get(name) || this.shared('tls-alpn-01', name);
    if (!record || record.identifier !== name) return null;
    const cached = this.contexts.get(name);
    if (cached && cached.keyAuthorization === record.keyAuthorization) return cached.context;
    const { key, cert } = require('./keys').alpnCertificate( // keys.js loads node:crypto: only for a TLS-ALPN-01 challenge
      name, record.keyAuthorization);
    const context = require('node:tls').createSecureContext({ key, cert, ALPNProtocols: ['acme-tls/1'] });
    this.contexts.set(name, { keyAuthorization: record.keyAuthorization, context });
    return context;
  }
}

module.exports = { ChallengeAnswers };
