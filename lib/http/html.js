'use strict';
// What svr's own pages (errors, listings, redirects) share: escaping, the JSON-or-HTML choice and
// the page shell. Node built-ins only.

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

// Accept prefers JSON: it mentions application/json (or +json) and does not list text/html first.
function prefersJSON(req) {
  const accept = req.headers && req.headers.accept;
  if (!accept || accept.indexOf('json') === -1) return false;
  const j = accept.search(/application\/(?:[\w.+-]*\+)?json/i);
  if (j === -1) return false;
  const h = accept.search(/text\/html/i);
  return h === -1 || j < h;
}

const PAGE_STYLE = 'body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;' +
  'color:#222;background:#f6f7f9}main{max-width:42rem;margin:10vh auto;padding:2rem 2.5rem;' +
  'background:#fff;border:1px solid #e2e5ea;border-radius:8px}h1{margin:0 0 .5rem;font-size:1.6rem}' +
  'p{margin:.5rem 0}pre{overflow:auto;padding:.75rem;background:#f1f2f4;border-radius:4px;font-size:.85rem}' +
  'a{color:#0b5cad}footer{margin-top:1.5rem;padding-top:.75rem;border-top:1px solid #eee;color:#777;font-size:.85rem}' +
  '@media (prefers-color-scheme:dark){body{background:#16181c;color:#ddd}main{background:#1f2227;' +
  'border-color:#333}pre{background:#2a2d33}a{color:#6cb0ff}footer{border-color:#333;color:#999}}';

// The opening of one of svr's pages, up to and including <main>; `title` is HTML already escaped.
function pageHead(title, style = PAGE_STYLE) {
  return '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<title>${title}</title><style>${style}</style></head>\n<body><main>`;
}

module.exports = { escapeHTML, prefersJSON, pageHead };
