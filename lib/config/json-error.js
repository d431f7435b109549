'use strict';

// Turns a JSON.parse SyntaxError into { line, column, message, excerpt }.
// V8 reports a character offset for most errors ("... in JSON at position 7"), but not for
// "Unexpected token 'x', "..." is not valid JSON" (Node 20) and never a line or column (Node 18/20),
// so we locate the error ourselves when V8 does not say where it is.
// message ends with what the user most likely wrote when it is something JSON lacks (a comment, a
// trailing comma, single quotes); excerpt is the line with a caret under the place:
//     5 |   "port": 8080,
//       |               ^

const EXCERPT_WIDTH = 100; // characters of a long (minified) line shown around the place

function describeJsonSyntaxError(text, error) {
  const index = errorIndex(text, error.message);
  const { line, column } = lineAndColumn(text, index);
  const hint = likelyCause(text, index);
  return { line, column, message: cleanMessage(error.message) + (hint ? `; ${hint}` : ''), excerpt: excerpt(text, line, column) };
}

// What JSON forbids and config files written by hand often have.
function likelyCause(text, index) {
  if (text.startsWith('//', index) || text.startsWith('/*', index)) return 'JSON has no comments (remove it, or move the note into a key of its own)';
  if (text[index] === "'") return 'JSON strings and key names take double quotes';
  if (text[index] === '}' || text[index] === ']') {
    const before = text.slice(0, index).trimEnd();
    if (before.endsWith(',')) return `JSON allows no trailing comma (remove the "," before this "${text[index]}")`;
  }
  return null;
}

function excerpt(text, line, column) {
  const source = text.split('\n')[line - 1] ?? '';
  let start = 0;
  if (source.length > EXCERPT_WIDTH) start = Math.max(0, Math.min(column - 1 - EXCERPT_WIDTH / 2, source.length - EXCERPT_WIDTH));
  const shown = source.slice(start, start + EXCERPT_WIDTH).replace(/\r$/, '');
  const prefix = start > 0 ? '…' : '';
  const number = String(line);
  const pad = ' '.repeat(number.length);
  // Tabs stay tabs under the line, so that the caret lands under the place in a terminal.
  const lead = (prefix + shown.slice(0, column - 1 - start)).replace(/[^\t]/g, ' ');
  return `    ${number} | ${prefix}${shown}${start + EXCERPT_WIDTH < source.length ? '…' : ''}\n    ${pad} | ${lead}^`;
}

function errorIndex(text, message) {
  if (/Unexpected end of JSON input/.test(message)) return text.length;
  const reported = /at position (\d+)/.exec(message);
  if (reported) return Number(reported[1]);
  const found = findSyntaxErrorIndex(text);
  return found === -1 ? text.length : found;
}

function lineAndColumn(text, index) {
  const before = text.slice(0, index);
  const line = before.split('\n').length;
  const column = index - (before.lastIndexOf('\n') + 1) + 1;
  return { line, column };
}

// Drop the parts of V8's message that repeat the input or give a raw offset: we print line:column.
function cleanMessage(message) {
  return message
    .replace(/, .*is not valid JSON$/s, '')
    .replace(/ in JSON at position \d+.*$/s, '')
    .replace(/ at position \d+.*$/s, '');
}

// A strict JSON scanner that returns the offset of the first character JSON.parse would reject,
// or -1 if the text is valid. Only used to place an error, never to parse.
function findSyntaxErrorIndex(text) {
  let i = 0;
  const fail = () => { throw new ScanError(i); };
  const skipSpace = () => { while (i < text.length && ' \t\n\r'.includes(text[i])) i++; };
  const expect = (char) => { if (text[i] !== char) fail(); i++; };

  function value() {
    skipSpace();
    const c = text[i];
    if (c === '{') return object();
    if (c === '[') return array();
    if (c === '"') return string();
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    for (const word of ['true', 'false', 'null']) {
      if (c === word[0]) return literal(word);
    }
    fail();
  }

  function object() {
    expect('{');
    skipSpace();
    if (text[i] === '}') { i++; return; }
    for (;;) {
      skipSpace();
      string();
      skipSpace();
      expect(':');
      value();
      skipSpace();
      if (text[i] === '}') { i++; return; }
      expect(',');
    }
  }

  function array() {
    expect('[');
    skipSpace();
    if (text[i] === ']') { i++; return; }
    for (;;) {
      value();
      skipSpace();
      if (text[i] === ']') { i++; return; }
      expect(',');
    }
  }

  function string() {
    expect('"');
    while (i < text.length && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail();
      if (text[i] === '\\') escape();
      else i++;
    }
    expect('"');
  }

  function escape() {
    i++;
    if (i < text.length && '"\\/bfnrt'.includes(text[i])) { i++; return; }
    if (text[i] !== 'u') fail();
    i++;
    for (let n = 0; n < 4; n++, i++) {
      if (!/[0-9a-fA-F]/.test(text[i] || '')) fail();
    }
  }

  function number() {
    if (text[i] === '-') i++;
    if (text[i] === '0') i++;
    else digits();
    if (text[i] === '.') { i++; digits(); }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      digits();
    }
  }

  function digits() {
    if (!(text[i] >= '0' && text[i] <= '9')) fail();
    while (text[i] >= '0' && text[i] <= '9') i++;
  }

  function literal(word) {
    for (const char of word) expect(char);
  }

  try {
    value();
    skipSpace();
    if (i < text.length) fail();
    return -1;
  } catch (error) {
    if (error instanceof ScanError) return error.index;
    throw error;
  }
}

class ScanError extends Error {
  constructor(index) {
    super(`JSON syntax error at ${index}`);
    this.index = index;
  }
}

module.exports = { describeJsonSyntaxError, findSyntaxErrorIndex };
