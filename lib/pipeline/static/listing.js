'use strict';
// Directory listing (`enableDirectoryListing`).
//
// - directories first, then files, each group sorted case-insensitively;
// - hidden: dotfiles (unless allowDotfiles), the server's own files, symlinks that are not followed
//   or that lead outside the web root;
// - size and modification time (UTC); names HTML-escaped, hrefs URL-encoded (absolute, from the
//   URL path, never from the file system path); a parent link except at the root;
// - JSON ({ path, parent, entries:[{name,type,size,modified,href}], truncated }) when Accept
//   prefers JSON; never an absolute server path in either form;
// - at most MAX_ENTRIES entries are examined per render (the rest is counted, not listed);
// - SVR.JS's customisation files in the listed directory (HTML, up to 64 KiB each): `.dirhead` or
//   `HEAD.html` after the title, `.maindesc` below the table, `.dirfoot` or `FOOT.html` at the end;
//   with `enableDirectoryListingWithDefaultHead`, the web root's `.head`/`head.html` and
//   `.foot`/`foot.html` (read at load) stand in for a directory without its own.
// - never more than a slice of work per turn of the event loop (20,000
//   entries held the worker for 150-200 ms): the names are sorted once per directory version (its
//   mtime changes when an entry is added, removed or renamed) and kept; entries are looked at and
//   rendered SLICE entries at a time;
// - a rendered page is shared by the requests for it for up to a second, and a worker renders two
//   at once (listing-pages.js), so sizes and dates shown are at most a second old.

const fs = require('fs');
const path = require('path');
const { promisify } = require('util');
const { appendVary } = require('../../http/headers');
const { escapeHTML, prefersJSON, pageHead } = require('../../http/html');
const { encodePath, encodeSegment } = require('../../http/target');
const { createPageCache } = require('./listing-pages');

// The callback forms, as promises: fs.promises would load its FileHandle machinery as well.
const stat = promisify(fs.stat);
const readdir = promisify(fs.readdir);

const MAX_ENTRIES = 10000;
const MAX_CUSTOM_BYTES = 64 * 1024;
const RETRY_AFTER_S = 1; // when the worker has as many renders as it runs and queues

const HTML = { name: 'html', type: 'text/html; charset=utf-8' };
const JSON_FORM = { name: 'json', type: 'application/json; charset=utf-8' };

// The first of `names` in `dir` that is a readable file of at most MAX_CUSTOM_BYTES, else null;
// read from a descriptor checked to lie where the web root's symlink rule allows (site.webRoot).
function readCustom(webRoot, dir, names) {
  for (const name of names) {
    try {
      return webRoot.readContained(path.join(dir, name), MAX_CUSTOM_BYTES);
    } catch { /* not there, too large, or not allowed: try the next one */ }
  }
  return null;
}
const SLICE = 256; // entries statted or rendered per turn: a few ms
const SORTED_DIRECTORIES_KEPT = 64;
// Case-insensitive, accents after their base letter, numbers by value (file2 before file10).
// Made at the first listing (~5 ms once): a collator brings ICU's collation data into the
// process, ~3 MiB of resident memory a worker that never lists a directory does without.
let collator = null;
function byName(a, b) {
  if (collator === null) collator = new Intl.Collator('en', { sensitivity: 'accent', numeric: true });
  return collator.compare(a.name, b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

function humanSize(n) {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = -1;
  do { v /= 1024; i++; } while (v >= 1024 && i < units.length - 1);
  return `${v >= 100 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

function isoMinute(d) {
  return d.toISOString().slice(0, 16).replace('T', ' ');
}

// Small inline SVG icons (no emoji font or extra request needed).
const svg = (inner) => `data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'>${inner}</svg>`;

const STYLE = 'body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;' +
  'color:#222;background:#f6f7f9}main{max-width:56rem;margin:2rem auto;padding:1.5rem 2rem;background:#fff;' +
  'border:1px solid #e2e5ea;border-radius:8px}h1{margin:0 0 1rem;font-size:1.35rem;font-weight:600;' +
  'overflow-wrap:anywhere}table{width:100%;border-collapse:collapse}th,td{padding:.4rem .6rem;text-align:left}' +
  'th{font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:#666;border-bottom:2px solid #e2e5ea}' +
  'td{border-bottom:1px solid #f0f1f3}tr:hover td{background:#f7f9fc}td.n{overflow-wrap:anywhere;hyphens:none}' +
  'td.s,td.m,th.s,th.m{white-space:nowrap;color:#555}td.s,th.s{text-align:right}a{color:#0b5cad;' +
  'text-decoration:none}a:hover{text-decoration:underline}.d a{font-weight:600}' +
  'td.n a::before{content:"";display:inline-block;width:16px;height:16px;margin-right:.55rem;' +
  'vertical-align:-2px;background-repeat:no-repeat;background-position:center}' +
  `.d a::before{background-image:url("${svg('<path fill=\'%23e3a53b\' d=\'M1 3.5h5l1.6 1.6H15v8.4H1z\'/>')}")}` +
  `.f a::before{background-image:url("${svg('<path fill=\'%23fff\' stroke=\'%23949cab\' d=\'M3.5 1.5h6l3 3v10h-9z\'/>' +
    '<path fill=\'none\' stroke=\'%23949cab\' d=\'M9.5 1.5v3h3\'/>')}")}` +
  `.p a::before{background-image:url("${svg('<path fill=\'%23949cab\' d=\'M8 2l5 5H9.6v7H6.4V7H3z\'/>')}")}` +
  '.empty{color:#777;padding:1rem .6rem}th button{all:unset;font:inherit;color:inherit;letter-spacing:inherit;text-transform:inherit;cursor:pointer}th button:focus-visible{outline:2px solid #0b5cad}th button::after{content:"";' +
  'display:inline-block;width:1em}th[aria-sort=ascending] button::after{content:"\\2191"}' +
  'th[aria-sort=descending] button::after{content:"\\2193"}' +
  // A phone: the date column goes (the size says enough), the page loses its outer margin.
  '@media (max-width:600px){main{margin:0;padding:1rem;border:0;border-radius:0}th.m,td.m{display:none}' +
  'th,td{padding:.4rem .3rem}}' +
  'footer{margin-top:1rem;color:#888;font-size:.8rem}@media (prefers-color-scheme:dark){body{background:' +
  '#16181c;color:#ddd}main{background:#1f2227;border-color:#333}th{border-color:#333;color:#aaa}td{' +
  'border-color:#2a2d33}tr:hover td{background:#262a30}a{color:#6cb0ff}td.s,td.m{color:#aaa}}';

// Click a column header to sort by it, again to reverse. Directories stay before files, the parent
// link and notes stay where they are. Without scripts the listing is sorted by name.
const SORT_SCRIPT = '<script>(function(){var t=document.querySelector("th>button").closest("table"),h=t.tHead.rows[0].cells,' +
  'b=t.tBodies[0];function key(r,i){var c=r.cells[i];return i?Number(c.dataset.v):c.textContent}' +
  'function sort(i){var th=h[i],up=th.getAttribute("aria-sort")!=="ascending",rows=[].slice.call(b.rows)' +
  '.filter(function(r){return!r.hasAttribute("data-keep")}),c=new Intl.Collator(undefined,{numeric:true,' +
  'sensitivity:"accent"});for(var j=0;j<h.length;j++)h[j].removeAttribute("aria-sort");' +
  'th.setAttribute("aria-sort",up?"ascending":"descending");rows.sort(function(x,y){var d=' +
  '(x.className==="d")-(y.className==="d");if(d)return -d;var a=key(x,i),z=key(y,i),o=i?a-z:c.compare(a,z);' +
  'return up?o:-o});rows.forEach(function(r){b.appendChild(r)});b.querySelectorAll("tr[data-keep]:not(.p)")' +
  '.forEach(function(r){b.appendChild(r)})}[].forEach.call(h,function(th,i){th.querySelector("button")' +
  '.addEventListener("click",function(){sort(i)})})})()</script>';

function createListing(site, { isHidden }) {
  const realRoot = site.root;
  const followSymlinks = site.config.followSymlinks;
  const allowDotfiles = site.config.allowDotfiles;
  const footer = escapeHTML(site.serverName);
  const withDefaultHead = site.config.enableDirectoryListingWithDefaultHead;
  const defaultHead = withDefaultHead ? readCustom(site.webRoot, realRoot, ['.head', 'head.html']) : null;
  const defaultFoot = withDefaultHead ? readCustom(site.webRoot, realRoot, ['.foot', 'foot.html']) : null;

  function customParts(realDir) {
    return {
      head: readCustom(site.webRoot, realDir, ['.dirhead', 'HEAD.html']) ?? defaultHead ?? '',
      description: readCustom(site.webRoot, realDir, ['.maindesc']),
      foot: readCustom(site.webRoot, realDir, ['.dirfoot', 'FOOT.html']) ?? defaultFoot ?? '',
    };
  }

  function inside(real) {
    return real === realRoot || real.startsWith(realRoot === '/' ? '/' : realRoot + path.sep);
  }

  // Synchronous: one thread-pool round trip and promise per entry made a 1,000-entry listing
  // 5x slower (22 -> 109 listings/s on one worker); a stat answered from the kernel's cache takes µs.
  // dir: a path naming the opened directory itself (webRoot.dirPath), realDir: its real path.
  function entryInfo(dir, realDir, dirent) {
    const full = path.join(dir, dirent.name);
    try {
      let real = path.join(realDir, dirent.name);
      let st;
      if (dirent.isSymbolicLink()) {
        if (!followSymlinks) return null;
        real = fs.realpathSync.native(full);
        if (!inside(real)) return null;
        if (isHidden(real)) return null;
        st = fs.statSync(real);
      } else {
        if (isHidden(real)) return null;
        st = fs.lstatSync(full);
      }
      const isDir = st.isDirectory();
      if (!isDir && !st.isFile()) return null;
      return { name: dirent.name, dir: isDir, size: isDir ? null : st.size, mtime: st.mtime };
    } catch (err) {
      return null; // vanished or unreadable entries are left out
    }
  }

  // realDir -> { version, dirents (listable, sorted by name, at most MAX_ENTRIES), truncated }
  const sortedDirectories = new Map();
  const sharedPage = createPageCache();

  // dir: where to read the directory (the checked descriptor's path); realDir: its real path.
  async function sortedEntries(realDir, dir) {
    const version = versionOf(await stat(dir));
    const kept = sortedDirectories.get(realDir);
    if (kept && kept.version === version) return kept;
    let dirents = await readdir(dir, { withFileTypes: true });
    dirents = dirents.filter((d) => (allowDotfiles || d.name[0] !== '.') && d.name !== 'serverSideScript.js');
    let truncated = 0;
    if (dirents.length > MAX_ENTRIES) {
      truncated = dirents.length - MAX_ENTRIES;
      dirents = dirents.slice(0, MAX_ENTRIES);
    }
    dirents.sort(byName);
    const entry = { version, dirents, truncated };
    if (sortedDirectories.size >= SORTED_DIRECTORIES_KEPT) sortedDirectories.delete(sortedDirectories.keys().next().value);
    sortedDirectories.set(realDir, entry);
    return entry;
  }

  // Answers the request. pathname: decoded URL path of the directory, ending in '/'.
  // The directory is read through a descriptor checked to be at realDir (site.webRoot), so a
  // directory swapped for a link after the path policy's check is not listed.
  return async function listDirectory(req, res, pathname, realDir) {
    const form = prefersJSON(req) ? JSON_FORM : HTML;
    const body = await pageOf(pathname, realDir, form);
    if (body === null) return site.sendError(req, res, 503, { headers: { 'Retry-After': String(RETRY_AFTER_S) } });
    res.statusCode = 200;
    res.setHeader('Content-Type', form.type);
    res.setHeader('Content-Length', body.length);
    appendVary(res, 'Accept');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (req.method === 'HEAD') res.end();
    else res.end(body);
  };

  // The page's bytes, rendered by this request or shared with others (listing-pages.js), or null
  // when the worker's renders are all taken.
  async function pageOf(pathname, realDir, form) {
    const opened = site.webRoot.openSync(realDir, { directory: true });
    if (opened === null) throw Object.assign(new Error('the directory is no longer at the checked path'), { code: 'ENOENT' });
    try {
      const dir = site.webRoot.dirPath(opened.fd, realDir);
      const version = versionOf(await stat(dir));
      return await sharedPage(`${form.name} ${pathname}`, version, () => render(pathname, realDir, dir, form));
    } finally {
      fs.closeSync(opened.fd);
    }
  }

  async function render(pathname, realDir, dir, form) {
    const { dirents, truncated } = await sortedEntries(realDir, dir);
    const looked = await inSlices(dirents, (d) => entryInfo(dir, realDir, d));
    // directories first, each group in name order (the names are sorted already: a stable split)
    const infos = looked.filter((e) => e && e.dir).concat(looked.filter((e) => e && !e.dir));

    const base = encodePath(pathname);
    const parent = pathname === '/' ? null : encodePath(pathname.replace(/[^/]*\/$/, ''));
    let body;
    if (form === JSON_FORM) {
      body = JSON.stringify({
        path: pathname,
        parent,
        entries: infos.map((e) => ({
          name: e.name,
          type: e.dir ? 'directory' : 'file',
          size: e.size,
          modified: e.mtime.toISOString(),
          href: base + encodeSegment(e.name) + (e.dir ? '/' : ''),
        })),
        truncated,
      }) + '\n';
    } else {
      const title = `Index of ${escapeHTML(pathname)}`;
      const rows = [];
      if (parent !== null) {
        rows.push(`<tr class="p" data-keep><td class="n"><a href="${escapeHTML(parent)}">Parent directory</a></td>` +
          '<td class="s">—</td><td class="m"></td></tr>');
      }
      rows.push(...await inSlices(infos, (e) => {
        const href = escapeHTML(base + encodeSegment(e.name) + (e.dir ? '/' : ''));
        return `<tr class="${e.dir ? 'd' : 'f'}"><td class="n"><a href="${href}">${escapeHTML(e.name)}` +
          `${e.dir ? '/' : ''}</a></td><td class="s" data-v="${e.dir ? -1 : e.size}">${e.dir ? '—' : humanSize(e.size)}</td>` +
          `<td class="m" data-v="${e.mtime.getTime()}">${isoMinute(e.mtime)}</td></tr>`;
      }));
      if (infos.length === 0) rows.push('<tr data-keep><td class="empty" colspan="3">This directory is empty.</td></tr>');
      if (truncated) {
        rows.push(`<tr data-keep><td class="empty" colspan="3">${truncated} more entries not shown.</td></tr>`);
      }
      const custom = customParts(realDir);
      body = `${pageHead(title, STYLE)}<h1>${title}</h1>\n${custom.head}` +
        '<table><thead><tr><th aria-sort="ascending"><button>Name</button></th><th class="s"><button>Size</button></th>' +
        '<th class="m"><button>Modified (UTC)</button></th></tr></thead>\n<tbody>\n' +
        rows.join('\n') + '\n</tbody></table>' + (custom.description === null ? '' : `<hr/>${custom.description}`) +
        `${custom.foot}<footer>${footer}</footer></main>${SORT_SCRIPT}</body></html>\n`;
    }
    return Buffer.from(body);
  }
}

// A directory's version: its mtime and ctime change when an entry is added, removed or renamed.
function versionOf(stats) {
  return `${stats.dev}-${stats.ino}-${stats.mtimeMs}-${stats.ctimeMs}`;
}

// items.map(fn), SLICE items per turn of the event loop, so other requests are served in between.
async function inSlices(items, fn) {
  const out = new Array(items.length);
  for (let start = 0; start < items.length; start += SLICE) {
    if (start > 0) await new Promise((resolve) => setImmediate(resolve));
    const end = Math.min(start + SLICE, items.length);
    for (let i = start; i < end; i++) out[i] = fn(items[i]);
  }
  return out;
}

module.exports = { createListing, humanSize, MAX_ENTRIES };
