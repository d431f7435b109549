#!/usr/bin/env node
'use strict';

// Renders the key reference of docs/configuration.md from config/svr-config.schema.json, so every
// key is described in exactly one place (the schema, which editors show too) and the page cannot
// drift from it. It rewrites only the text between the two marker comments below;
// test/config/config-docs.test.js fails when that text is out of date.
//
//   node scripts/config-docs.js           write docs/configuration.md
//   node scripts/config-docs.js --check   exit 1 if it is out of date, write nothing

const fs = require('node:fs');
const path = require('node:path');

const REPO = path.join(__dirname, '..');
const SCHEMA_FILE = path.join(REPO, 'config', 'svr-config.schema.json');
const DOC_FILE = path.join(REPO, 'docs', 'configuration.md');
const START = '<!-- keys:start -->';
const END = '<!-- keys:end -->';

// Which table a top-level key goes in. A key the schema has and no group names lands in "Other
// keys", so the reference is complete even before someone files a new key here.
const GROUPS = [
  ['Listening, processes, logging', ['port', 'wwwroot', 'workers', 'enableLogging', 'logFormat',
    'shutdownTimeout', 'keepAliveTimeout', 'headersTimeout', 'requestTimeout', '$schema']],
  ['Requests and URLs', ['rewriteMap', 'rewriteDirtyURLs', 'allowDoubleSlashes', 'disableTrailingSlashRedirects',
    'maxURLLength', 'maxHeaderSize']],
  ['Static files', ['enableDirectoryListing', 'allowDotfiles', 'followSymlinks', 'enableETag',
    'enableDirectoryListingWithDefaultHead', 'enableIncludingHeadAndFootInHTML']],
  ['Responses and error pages', ['customHeaders', 'exposeServerVersion', 'errorPages', 'page404',
    'exposeModsInErrorPages', 'stackHidden', 'serverAdministratorEmail']],
  ['Server-side JavaScript and mods', ['useWebRootServerSideScript', 'modsDirectory',
    'maxPostDataSize', 'users', 'environmentVariables']],
  ['HTTPS and HTTP/2', ['secure', 'sport', 'spubport', 'pubport', 'cert', 'key', 'sni', 'enableHTTP2',
    'disableNonEncryptedServer', 'disableToHTTPSRedirect', 'domain', 'tlsMinVersion', 'tlsMaxVersion',
    'cipherSuite', 'ecdhCurve', 'signatureAlgorithms', 'useClientCertificate', 'rejectUnauthorizedClientCertificates',
    'hstsMaxAge', 'stateDirectory']],
  ['Compression and the file cache', ['enableCompression', 'dontCompress', 'fileCacheMaxBytes',
    'fileCacheMaxFileSize']],
  ['Limits and liveness (docs/limits.md)', ['workerStallTimeout', 'scriptTimeout', 'reloadTransferTimeout',
    'sendTimeout', 'maxConnections', 'maxPostDataInFlight', 'http2Settings', 'compressionMaxStreams', 'compressionMaxFileSize']],
  // Keys of the reverse proxy and monitoring work; a name the schema does not have is skipped.
  ['Reverse proxy and monitoring', ['proxy', 'trustedProxies', 'acceptProxyProtocol', 'health',
    'metrics']],
  ['Rate limits and caching (docs/limits-and-caching.md)', ['rateLimits', 'rateLimitStore', 'proxyCache']],
  ['Access rules and client addresses', ['nonStandardCodes', 'blacklist', 'enableIPSpoofing',
    'disableServerSideScriptExpose', 'allowStatus']],
  ['Virtual hosts', ['wwwrootVHost', 'customHeadersVHost', 'enableDirectoryListingVHost', 'wwwredirect',
    'wwwrootPostfixesVHost', 'wwwrootPostfixPrefixesVHost', 'allowPostfixDoubleSlashes']],
  // SVR.JS keys svr accepts so an SVR.JS config.json starts (docs/svrjs-migration.md).
  ['Accepted from SVR.JS configs without effect', ['domian', 'timestamp', 'version', 'optOutOfStatisticsServer',
    'disableConfigurationSaving', 'disableUnusedWorkerTermination', 'enableRemoteLogBrowsing',
    'enableOCSPStapling']],
];

// A default longer than this is shown below the tables instead of in its cell.
const LONG_DEFAULT = 40;

// The anchor of a key's row: "key-port", "key-rewritemap-definingregex".
function anchorOf(keyPath) {
  return 'key-' + keyPath.join('-').toLowerCase().replace(/[^a-z0-9-]/g, '');
}

function resolveRef(schema, node) {
  if (!node || !node.$ref) return node || {};
  const target = node.$ref.replace(/^#\//, '').split('/').reduce((at, part) => at[part], schema);
  const { $ref, ...own } = node;
  return { ...resolveRef(schema, target), ...own };
}

function cell(text) {
  return String(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function code(value) {
  return '`' + value + '`';
}

function rangeOf(node) {
  const min = node.minimum;
  const max = node.maximum;
  if (min !== undefined && max !== undefined) return ` ${min}–${max}`;
  if (min !== undefined) return ` ≥ ${min}`;
  return '';
}

// The identity of a schema node for the sub-table map: its $ref when it has one (so two keys of
// the same $defs type share one table), else the node itself.
function idOf(raw) {
  return (raw && raw.$ref) || raw;
}

function subTableLink(subTables, raw) {
  const sub = raw && subTables.get(idOf(raw));
  return sub && `[${sub.title}](#${sub.anchor})`;
}

// "integer 0–65535", "boolean", "`"combined"` | `"json"`", "array of [`rewriteMap` entries](#...)"...
function typeOf(schema, raw, subTables) {
  const node = resolveRef(schema, raw);
  const alternatives = node.anyOf || node.oneOf;
  if (alternatives) {
    return [...new Set(alternatives.map((alt) => typeOf(schema, alt, subTables)))].join(' or ');
  }
  if (node.enum) return node.enum.map((v) => code(JSON.stringify(v))).join(' | ');
  const types = [].concat(node.type || []);
  const parts = types.map((type) => {
    if (type === 'integer' || type === 'number') return type + rangeOf(node);
    if (type === 'string' && node.format === 'svr-regex') return 'regular expression string';
    if (type === 'array') {
      const items = node.items || {};
      const link = subTableLink(subTables, items);
      if (link) return `array of ${link}`;
      if (resolveRef(schema, items).format === 'svr-regex') return 'array of regular expression strings';
      return 'array of ' + (resolveRef(schema, items).type || 'value') + 's';
    }
    if (type === 'object') {
      const fields = node.properties && subTableLink(subTables, raw);
      if (fields) return `object (${fields})`;
      const values = node.additionalProperties;
      const link = typeof values === 'object' && subTableLink(subTables, values);
      if (link) return `object of ${link}`;
      if (values && values.type) return `object of ${values.type}s`;
      return 'object';
    }
    return type;
  });
  return parts.join(' or ') + unitOf(raw, node);
}

// The unit of a number, from the schema's "milliseconds" type or the words of the description.
function unitOf(raw, node) {
  if (!node.type || ![].concat(node.type).includes('integer')) return '';
  if (raw.$ref === '#/$defs/milliseconds') return ' (ms)';
  const description = node.description || '';
  if (/\bbytes\b/.test(description)) return ' (bytes)';
  if (/\bin seconds\b/.test(description)) return ' (seconds)';
  return '';
}

// 33554432 -> "32 MiB", for defaults of keys measured in bytes.
function readableBytes(value) {
  for (const [unit, size] of [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]]) {
    if (value >= size && value % size === 0) return `${value / size} ${unit}`;
  }
  return null;
}

function defaultOf(name, node, longDefaults) {
  if (!('default' in node)) return '—';
  const text = JSON.stringify(node.default);
  const inBytes = Number.isInteger(node.default) && /\bbytes\b/.test(node.description || '');
  const readable = inBytes && readableBytes(node.default);
  if (readable) return `${code(text)} (${readable})`;
  if (text.length <= LONG_DEFAULT) return code(text);
  longDefaults.push([name, node.default]);
  return `[below](#${anchorOf(['default', name])})`;
}

function row(schema, keyPath, raw, subTables, longDefaults) {
  const node = resolveRef(schema, raw);
  const name = keyPath[keyPath.length - 1];
  const key = `<a id="${anchorOf(keyPath)}"></a>${code(name)}`;
  const type = typeOf(schema, raw, subTables);
  const def = defaultOf(keyPath.join('.'), node, longDefaults);
  return `| ${key} | ${cell(type)} | ${def} | ${cell(node.description || '')} |`;
}

const HEADER = ['| Key | Type | Default | Meaning |', '| --- | --- | --- | --- |'];

// Tables for the keys inside keys: the fields of an object-valued key (or of the object form of
// an anyOf), and the fields of the entries of an array or map (rewrite rules, error pages, users,
// SNI certificates). Found recursively; a $defs type used by several keys gets one table.
function findSubTables(schema, properties = schema.properties, parentPath = [], subTables = new Map()) {
  for (const [key, raw] of Object.entries(properties)) {
    const node = resolveRef(schema, raw);
    const keyPath = [...parentPath, key];
    const candidates = [];
    if (node.properties) candidates.push([raw, 'fields']);
    for (const alt of node.anyOf || node.oneOf || []) candidates.push([alt, 'fields']);
    if (node.items) candidates.push([node.items, 'entries']);
    if (typeof node.additionalProperties === 'object') candidates.push([node.additionalProperties, 'entries']);
    for (const [inner, kind] of candidates) {
      const def = resolveRef(schema, inner);
      if (!def.properties || subTables.has(idOf(inner))) continue;
      const title = `${code(keyPath.join('.'))} ${kind}`;
      subTables.set(idOf(inner), { keyPath, def, title, anchor: anchorOf([...keyPath, kind]) });
      findSubTables(schema, def.properties, keyPath, subTables);
    }
  }
  return subTables;
}

function render(schema) {
  const subTables = findSubTables(schema);
  const longDefaults = [];
  const keys = Object.keys(schema.properties);
  const placed = new Set();
  const out = [
    START,
    '<!-- Generated from config/svr-config.schema.json by `node scripts/config-docs.js`; edit the',
    '     schema\'s "description"s, not this text. -->',
    '',
  ];

  const groups = GROUPS.map(([title, names]) => [title, names.filter((name) => keys.includes(name))]);
  const others = keys.filter((name) => !GROUPS.some(([, names]) => names.includes(name)));
  if (others.length) groups.push(['Other keys', others]);

  for (const [title, names] of groups) {
    if (!names.length) continue;
    out.push(`### ${title}`, '', ...HEADER);
    for (const name of names) {
      placed.add(name);
      out.push(row(schema, [name], schema.properties[name], subTables, longDefaults));
    }
    out.push('');
  }

  for (const sub of subTables.values()) {
    out.push(`### <a id="${sub.anchor}"></a>${sub.title}`, '');
    if (sub.def.description) out.push(sub.def.description, '');
    const required = sub.def.required || [];
    if (required.length) out.push(`Required: ${required.map(code).join(', ')}.`, '');
    out.push(...HEADER);
    for (const [name, raw] of Object.entries(sub.def.properties)) {
      out.push(row(schema, [...sub.keyPath, name], raw, subTables, longDefaults));
    }
    out.push('');
  }

  if (longDefaults.length) {
    out.push('### Long defaults', '');
    for (const [name, value] of longDefaults) {
      out.push(`<a id="${anchorOf(['default', name])}"></a>${code(name)}:`, '', '```json',
        JSON.stringify(value, null, 2), '```', '');
    }
  }
  out.push(END);
  return out.join('\n');
}

// The document with its generated part replaced; throws when the markers are missing.
function update(doc, schema) {
  const start = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (start === -1 || end === -1 || end < start) {
    throw new Error(`${DOC_FILE}: expected the markers ${START} and ${END}`);
  }
  return doc.slice(0, start) + render(schema) + doc.slice(end + END.length);
}

function readSchema() {
  return JSON.parse(fs.readFileSync(SCHEMA_FILE, 'utf8'));
}

function main(argv) {
  const doc = fs.readFileSync(DOC_FILE, 'utf8');
  const next = update(doc, readSchema());
  if (argv.includes('--check')) {
    if (next !== doc) {
      console.error(`${path.relative(REPO, DOC_FILE)} is out of date: run node scripts/config-docs.js`);
      process.exitCode = 1;
    }
    return;
  }
  if (next !== doc) fs.writeFileSync(DOC_FILE, next);
  console.log(`${path.relative(REPO, DOC_FILE)}: ${next === doc ? 'up to date' : 'updated'}`);
}

if (require.main === module) main(process.argv.slice(2));

module.exports = { render, update, readSchema, anchorOf, SCHEMA_FILE, DOC_FILE, START, END };
