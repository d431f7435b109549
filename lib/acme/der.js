'use strict';
// Just enough ASN.1 DER to write a certificate signing request and the TLS-ALPN-01 validation
// certificate, and to read the two fields of a certificate that ACME Renewal Information names it
// by (the authority key identifier and the serial number). Node's crypto signs and verifies but
// builds neither structure.

function length(n) {
  if (n < 0x80) return Buffer.from([n]);
  const bytes = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag, content) {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

const sequence = (...items) => tlv(0x30, Buffer.concat(items));
const set = (...items) => tlv(0x31, Buffer.concat(items));
const octetString = (bytes) => tlv(0x04, bytes);
const bitString = (bytes) => tlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));
const utf8String = (text) => tlv(0x0c, Buffer.from(text, 'utf8'));
const boolean = (value) => tlv(0x01, Buffer.from([value ? 0xff : 0]));
const nullValue = () => tlv(0x05, Buffer.alloc(0));
// [n] EXPLICIT (constructed) and [n] IMPLICIT for a primitive (a dNSName in a SAN is [2] IA5String).
const explicit = (n, content) => tlv(0xa0 | n, content);
const implicit = (n, bytes) => tlv(0x80 | n, bytes);

// A non-negative INTEGER from big-endian bytes.
function integer(bytes) {
  let b = Buffer.from(bytes);
  while (b.length > 1 && b[0] === 0 && (b[1] & 0x80) === 0) b = b.subarray(1);
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted) {
  const parts = dotted.split('.').map(Number);
  const bytes = [40 * parts[0] + parts[1]];
  for (const part of parts.slice(2)) {
    const chunk = [part & 0x7f];
    for (let rest = Math.floor(part / 128); rest > 0; rest = Math.floor(rest / 128)) chunk.unshift(0x80 | (rest & 0x7f));
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

// UTCTime until 2049, GeneralizedTime after (RFC 5280 §4.1.2.5).
function time(date) {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'; // YYYYMMDDHHMMSSZ
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

// Reading: one element at offset -> { tag, start (of the content), end, next }.
function read(buf, offset = 0) {
  const tag = buf[offset];
  let len = buf[offset + 1];
  let start = offset + 2;
  if (len & 0x80) {
    const count = len & 0x7f;
    len = 0;
    for (let i = 0; i < count; i++) len = len * 256 + buf[start + i];
    start += count;
  }
  if (start + len > buf.length) throw new Error('truncated DER');
  return { tag, start, end: start + len, next: start + len };
}

// The elements inside a constructed one.
function children(buf, node) {
  const list = [];
  for (let at = node.start; at < node.end;) {
    const child = read(buf, at);
    list.push(child);
    at = child.next;
  }
  return list;
}

function decodeOid(bytes) {
  const parts = [Math.floor(bytes[0] / 40), bytes[0] % 40];
  let value = 0;
  for (const byte of bytes.subarray(1)) {
    value = value * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) { parts.push(value); value = 0; }
  }
  return parts.join('.');
}

// From a DER certificate: the serial number's content bytes and the authority key identifier
// (null when the certificate has none).
function certificateIds(der) {
  const cert = read(der);
  const tbs = children(der, cert)[0];
  const fields = children(der, tbs);
  const hasVersion = fields[0].tag === 0xa0;
  const serial = fields[hasVersion ? 1 : 0];
  let authorityKeyId = null;
  const extensionsField = fields.find((f) => f.tag === 0xa3);
  if (extensionsField) {
    for (const extension of children(der, children(der, extensionsField)[0])) {
      const parts = children(der, extension);
      if (decodeOid(der.subarray(parts[0].start, parts[0].end)) !== '2.5.29.35') continue;
      const value = parts[parts.length - 1]; // OCTET STRING holding AuthorityKeyIdentifier
      const aki = children(der, read(der, value.start));
      const keyId = aki.find((part) => part.tag === 0x80);
      if (keyId) authorityKeyId = der.subarray(keyId.start, keyId.end);
    }
  }
  return { serial: der.subarray(serial.start, serial.end), authorityKeyId };
}

module.exports = {
  sequence, set, octetString, bitString, utf8String, boolean, nullValue, explicit, implicit,
  integer, oid, time, read, children, decodeOid, certificateIds,
};
