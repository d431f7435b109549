'use strict';
// The ACME protocol (RFC 8555) as svr uses it, over node:https: the directory, nonces,
// signed requests (a rejected nonce is retried with the fresh one the CA sent), the account,
// orders with an optional profile and the certificate they replace (RFC 9773), authorizations,
// challenges, finalization, the certificate chain, and ACME Renewal Information.
//
// Every failure is an AcmeError whose `problem` is the CA's problem document ({ type, detail,
// status }) when it sent one, so the log can say in plain words what the CA refused.

const { signJws, macJws, publicJwk, thumbprint, base64url } = require('./keys');
const der = require('./der');

const REQUEST_TIMEOUT_MS = 30000;
// Tries of a signed request whose nonce the CA refuses (badNonce), each with the fresh nonce the
// refusal carried. A CA may refuse any nonce (Pebble refuses 5% on purpose): with 3 tries an order
// of ten requests failed about once in a thousand; with 5, once in some three million.
const NONCE_RETRIES = 5;

class AcmeError extends Error {
  constructor(message, problem = null) {
    super(message);
    this.problem = problem;
  }
}

// "urn:ietf:params:acme:error:rejectedIdentifier: ..." -> a line for the log.
function describeProblem(problem) {
  if (!problem) return 'no problem document';
  const type = String(problem.type || 'about:blank').replace('urn:ietf:params:acme:error:', '');
  const sub = Array.isArray(problem.subproblems) && problem.subproblems.length
    ? ` (${problem.subproblems.map((p) => `${p.identifier ? p.identifier.value + ': ' : ''}${p.detail}`).join('; ')})` : '';
  return `${type}: ${problem.detail || 'no detail'}${sub}`;
}

class AcmeClient {
  // accountKey: a private KeyObject; accountUrl: known after account().
  constructor({ directoryUrl, accountKey, accountUrl = null, userAgent = 'svr' }) {
    this.directoryUrl = directoryUrl;
    this.accountKey = accountKey;
    this.accountUrl = accountUrl;
    this.userAgent = userAgent;
    this.nonces = [];
    this.dir = null;
  }

  async request(url, { method = 'GET', body, accept } = {}) {
    const headers = { 'User-Agent': this.userAgent };
    if (body !== undefined) headers['Content-Type'] = 'application/jose+json';
    if (accept) headers.Accept = accept;
    let response;
    try {
      response = await send(url, method, headers, body === undefined ? undefined : JSON.stringify(body));
    } catch (error) {
      throw new AcmeError(`cannot reach the CA at ${url} (${error.code || error.message})`);
    }
    const nonce = response.headers.get('replay-nonce');
    if (nonce) this.nonces.push(nonce);
    return response;
  }

  async directory() {
    if (this.dir) return this.dir;
    const response = await this.request(this.directoryUrl);
    if (!response.ok) throw new AcmeError(`the CA's directory ${this.directoryUrl} answered ${response.status}`);
    this.dir = await response.json();
    if (!this.dir.newNonce || !this.dir.newAccount || !this.dir.newOrder) throw new AcmeError(`${this.directoryUrl} is not an ACME directory (no newNonce, newAccount or newOrder)`);
    return this.dir;
  }

  async nonce() {
    if (this.nonces.length) return this.nonces.pop();
    const response = await this.request((await this.directory()).newNonce, { method: 'HEAD' });
    if (!this.nonces.length) throw new AcmeError(`the CA sent no Replay-Nonce (HTTP ${response.status})`);
    return this.nonces.pop();
  }

  // A signed POST; payload undefined is POST-as-GET. With jwk: true the key itself is in the
  // header (newAccount), else the account URL. Resolves { status, headers, body, text }.
  async post(url, payload, { jwk = false, accept, raw = false } = {}) {
    for (let attempt = 1; ; attempt++) {
      const header = { nonce: await this.nonce(), url };
      if (jwk) header.jwk = publicJwk(this.accountKey);
      else header.kid = this.accountUrl;
      const response = await this.request(url, { method: 'POST', body: signJws(this.accountKey, header, payload), accept });
      const type = response.headers.get('content-type') || '';
      if (type.startsWith('application/problem+json')) {
        const problem = await response.json();
        if (problem.type === 'urn:ietf:params:acme:error:badNonce' && attempt < NONCE_RETRIES) continue;
        throw new AcmeError(`the CA refused ${new URL(url).pathname}: ${describeProblem(problem)}`, problem);
      }
      if (response.status >= 400) throw new AcmeError(`the CA answered ${response.status} to ${new URL(url).pathname}`);
      const text = await response.text();
      const body = raw || !type.includes('json') ? null : JSON.parse(text);
      return { status: response.status, headers: response.headers, body, text };
    }
  }

  // Creates the account, or finds the one this key already has (the CA answers 200 then).
  async account({ email, eab = null } = {}) {
    const dir = await this.directory();
    const payload = { termsOfServiceAgreed: true };
    if (email) payload.contact = [`mailto:${email}`];
    if (eab) {
      const hmacKey = Buffer.from(eab.hmacKey, 'base64url');
      payload.externalAccountBinding = macJws(hmacKey, { kid: eab.kid, url: dir.newAccount }, publicJwk(this.accountKey));
    } else if (dir.meta && dir.meta.externalAccountRequired) {
      throw new AcmeError('this CA requires external account binding: set acme.eab to the key id and HMAC key it gave you');
    }
    const { headers, body } = await this.post(dir.newAccount, payload, { jwk: true });
    this.accountUrl = headers.get('location');
    if (!this.accountUrl) throw new AcmeError('the CA created an account but sent no Location for it');
    return { url: this.accountUrl, status: body && body.status };
  }

  async newOrder(names, { profile = null, replaces = null } = {}) {
    const dir = await this.directory();
    const payload = { identifiers: names.map((value) => ({ type: 'dns', value })) };
    if (profile) {
      const offered = dir.meta && dir.meta.profiles ? Object.keys(dir.meta.profiles) : [];
      if (!offered.includes(profile)) throw new AcmeError(`the CA offers no profile ${JSON.stringify(profile)} (it offers: ${offered.join(', ') || 'none'})`);
      payload.profile = profile;
    }
    if (replaces && dir.renewalInfo) payload.replaces = replaces;
    const { headers, body } = await this.post(dir.newOrder, payload);
    return { url: headers.get('location'), ...body };
  }

  async get(url) {
    return (await this.post(url)).body;
  }

  // Polls url until its status is not one of `waiting`: as the CA's Retry-After says, else after
  // 250 ms, 500 ms, 1 s ... at most 10 s apart.
  async poll(url, waiting, { timeoutMs = 120000 } = {}) {
    const until = Date.now() + timeoutMs;
    for (let round = 0; ; round++) {
      const { headers, body } = await this.post(url);
      if (!waiting.includes(body.status)) return body;
      if (Date.now() > until) throw new AcmeError(`${new URL(url).pathname} still ${body.status} after ${timeoutMs} ms`);
      const retryAfter = Number(headers.get('retry-after'));
      const delay = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : 250 * 2 ** round;
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, 10000)));
    }
  }

  keyAuthorization(token) {
    return `${token}.${thumbprint(this.accountKey)}`;
  }

  async answerChallenge(url) {
    return (await this.post(url, {})).body;
  }

  async finalize(order, csrDer) {
    await this.post(order.finalize, { csr: base64url(csrDer) });
    return this.poll(order.url, ['pending', 'ready', 'processing']);
  }

  async certificate(url) {
    return (await this.post(url, undefined, { accept: 'application/pem-certificate-chain', raw: true })).text;
  }

  // ACME Renewal Information: { start, end } of the CA's suggested window, or null when the CA
  // offers none.
  async renewalInfo(certDer) {
    const dir = await this.directory();
    if (!dir.renewalInfo) return null;
    const response = await this.request(`${dir.renewalInfo.replace(/\/$/, '')}/${ariCertId(certDer)}`);
    if (!response.ok) throw new AcmeError(`the CA's renewal information answered ${response.status}`);
    const body = await response.json();
    const window = body.suggestedWindow || {};
    const start = Date.parse(window.start);
    const end = Date.parse(window.end);
    if (!Number.isFinite(start) || !Number.isFinite(end) || end < start) throw new AcmeError('the CA sent renewal information without a valid suggestedWindow');
    return { start, end, explanationURL: body.explanationURL || null };
  }
}

// One HTTP(S) exchange, with the few parts of a fetch Response the client reads. node:https
// rather than fetch: fetch's HTTP parser is WebAssembly, which cost the primary ~10 MB resident
// and a ~20 MB peak while it compiled (measured), for a handful of requests a day.
function send(url, method, headers, body) {
  const target = new URL(url);
  const transport = target.protocol === 'http:' ? require('node:http') : require('node:https');
  return new Promise((resolve, reject) => {
    const req = transport.request(target, { method, headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode,
          ok: res.statusCode >= 200 && res.statusCode < 300,
          headers: { get: (name) => (res.headers[name.toLowerCase()] === undefined ? null : String(res.headers[name.toLowerCase()])) },
          text: async () => text,
          json: async () => JSON.parse(text),
        });
      });
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end(body);
  });
}

// RFC 9773 §4.1: base64url(authority key identifier) "." base64url(serial number bytes).
function ariCertId(certDer) {
  const { serial, authorityKeyId } = der.certificateIds(certDer);
  if (!authorityKeyId) throw new AcmeError('the certificate has no authority key identifier; it cannot be named to the CA\'s renewal information');
  return `${base64url(authorityKeyId)}.${base64url(serial)}`;
}

module.exports = { AcmeClient, AcmeError, describeProblem, ariCertId };
