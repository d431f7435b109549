'use strict';
// Keys, signatures and the two DER documents svr makes for ACME, all with Node's crypto:
//   generateKey(type)                 'ec-p256' (default), 'ec-p384', 'rsa-2048', 'rsa-4096'
//   publicJwk(key), thumbprint(key)   RFC 7638
//   signJws(key, protectedHeader, payload)    flattened JWS (RFC 7515) as ACME sends it
//   macJws(hmacKey, protectedHeader, payload) the external account binding's HS256 JWS
//   certificateRequest(key, names)    PKCS#10 CSR (DER) with the names in subjectAltName
//   alpnCertificate(name, keyAuthorization) -> { key, cert }   RFC 8737's validation certificate

const crypto = require('node:crypto');
const der = require('./der');

const KEY_TYPES = {
  'ec-p256': { type: 'ec', options: { namedCurve: 'P-256' }, hash: 'sha256', jwsAlg: 'ES256', sigOid: '1.2.840.10045.4.3.2' },
  'ec-p384': { type: 'ec', options: { namedCurve: 'P-384' }, hash: 'sha384', jwsAlg: 'ES384', sigOid: '1.2.840.10045.4.3.3' },
  'rsa-2048': { type: 'rsa', options: { modulusLength: 2048 }, hash: 'sha256', jwsAlg: 'RS256', sigOid: '1.2.840.113549.1.1.11' },
  'rsa-4096': { type: 'rsa', options: { modulusLength: 4096 }, hash: 'sha256', jwsAlg: 'RS256', sigOid: '1.2.840.113549.1.1.11' },
};

const base64url = (data) => Buffer.from(data).toString('base64url');

function generateKey(keyType = 'ec-p256') {
  const spec = KEY_TYPES[keyType];
  if (!spec) throw new Error(`unknown key type ${JSON.stringify(keyType)}`);
  return crypto.generateKeyPairSync(spec.type, spec.options).privateKey;
}

function specOf(key) {
  if (key.asymmetricKeyType === 'rsa') return KEY_TYPES['rsa-2048'];
  const curve = key.asymmetricKeyDetails.namedCurve;
  if (curve === 'prime256v1' || curve === 'P-256') return KEY_TYPES['ec-p256'];
  if (curve === 'secp384r1' || curve === 'P-384') return KEY_TYPES['ec-p384'];
  throw new Error(`unsupported curve ${curve}`);
}

// The public JWK with only the members RFC 7638 hashes, in its order.
function publicJwk(key) {
  const jwk = crypto.createPublicKey(key).export({ format: 'jwk' });
  return jwk.kty === 'EC' ? { crv: jwk.crv, kty: 'EC', x: jwk.x, y: jwk.y } : { e: jwk.e, kty: 'RSA', n: jwk.n };
}

function thumbprint(key) {
  return base64url(crypto.createHash('sha256').update(JSON.stringify(publicJwk(key))).digest());
}

// payload undefined -> "" (POST-as-GET).
function signJws(key, protectedHeader, payload) {
  const spec = specOf(key);
  const protected64 = base64url(JSON.stringify({ alg: spec.jwsAlg, ...protectedHeader }));
  const payload64 = payload === undefined ? '' : base64url(JSON.stringify(payload));
  const signature = crypto.sign(spec.hash, Buffer.from(`${protected64}.${payload64}`), { key, dsaEncoding: 'ieee-p1363' });
  return { protected: protected64, payload: payload64, signature: base64url(signature) };
}

function macJws(hmacKey, protectedHeader, payload) {
  const protected64 = base64url(JSON.stringify({ alg: 'HS256', ...protectedHeader }));
  const payload64 = base64url(JSON.stringify(payload));
  const signature = crypto.createHmac('sha256', hmacKey).update(`${protected64}.${payload64}`).digest();
  return { protected: protected64, payload: payload64, signature: base64url(signature) };
}

function algorithm(spec) {
  return spec.type === 'rsa' ? der.sequence(der.oid(spec.sigOid), der.nullValue()) : der.sequence(der.oid(spec.sigOid));
}

function commonName(name) {
  return der.sequence(der.set(der.sequence(der.oid('2.5.4.3'), der.utf8String(name))));
}

function subjectAltName(names) {
  return der.sequence(der.oid('2.5.29.17'), der.octetString(der.sequence(...names.map((n) => der.implicit(2, Buffer.from(n, 'ascii'))))));
}

function spki(key) {
  return crypto.createPublicKey(key).export({ type: 'spki', format: 'der' });
}

function certificateRequest(key, names) {
  const spec = specOf(key);
  const extensionRequest = der.sequence(der.oid('1.2.840.113549.1.9.14'), der.set(der.sequence(subjectAltName(names))));
  const info = der.sequence(der.integer([0]), commonName(names[0]), spki(key), der.explicit(0, extensionRequest));
  const signature = crypto.sign(spec.hash, info, key);
  return der.sequence(info, algorithm(spec), der.bitString(signature));
}

// A self-signed certificate for `name` whose critical acmeIdentifier extension holds the
// SHA-256 of the key authorization; valid for a week around now.
function alpnCertificate(name, keyAuthorization) {
  const key = generateKey('ec-p256');
  const spec = specOf(key);
  const digest = crypto.createHash('sha256').update(keyAuthorization).digest();
  const acmeIdentifier = der.sequence(der.oid('1.3.6.1.5.5.7.1.31'), der.boolean(true), der.octetString(der.octetString(digest)));
  const now = Date.now();
  const tbs = der.sequence(
    der.explicit(0, der.integer([2])),
    der.integer(crypto.randomBytes(16)),
    algorithm(spec),
    commonName(name),
    der.sequence(der.time(new Date(now - 86400000)), der.time(new Date(now + 6 * 86400000))),
    commonName(name),
    spki(key),
    der.explicit(3, der.sequence(subjectAltName([name]), acmeIdentifier)),
  );
  const cert = der.sequence(tbs, algorithm(spec), der.bitString(crypto.sign(spec.hash, tbs, key)));
  const pem = `-----BEGIN CERTIFICATE-----\n${cert.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END CERTIFICATE-----\n`;
  return { key: key.export({ type: 'pkcs8', format: 'pem' }), cert: pem };
}

module.exports = { KEY_TYPES, base64url, generateKey, publicJwk, thumbprint, signJws, macJws, certificateRequest, alpnCertificate };
