'use strict';
// A script's stderr (FastCGI's FCGI_STDERR records, a CGI process's stderr) as error log lines:
// one line each, prefixed with who wrote it, at most maxBytes per request so that a script
// writing without end cannot flood the log.
//
//   const lines = new StderrLines(write(line), maxBytes)
//   lines.push(bytes)   whole lines go out as they complete; a UTF-8 character may be split
//                       between two pushes
//   lines.flush()       the last line, unfinished or not (the script's end)
//
// A script's line is the script's text, never svr's log line: each LF starts a new line, which
// the caller prefixes again (a PHP stack trace stays readable, and every line says who wrote it),
// and every other control character is escaped (`\x1b`, `\x0d` for CR), so that neither a CR
// nor an ANSI escape sequence can overwrite the prefix on a terminal and make the line pass for
// svr's own. TAB stays. Backslashes are left alone: PHP's namespaces (App\Http) stay readable.

const { StringDecoder } = require('node:string_decoder');

// C0 but TAB (LF cannot be in a line), DEL, C1 (0x9b is a CSI of its own) and the Unicode line
// and paragraph separators some viewers break lines at.
const CONTROL_CHARACTER = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]/g;

function escapeControl(character) {
  const code = character.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

function printable(line) {
  return line.replace(CONTROL_CHARACTER, escapeControl);
}

class StderrLines {
  constructor(write, maxBytes) {
    this.write = write;
    this.left = maxBytes;
    // Records and pipe reads end wherever the script's bytes fall: the first bytes of a character
    // wait here for the rest, in the next push.
    this.decoder = new StringDecoder('utf8');
    this.text = '';
  }

  push(bytes) {
    if (this.left <= 0) return;
    const taken = bytes.length > this.left ? bytes.subarray(0, this.left) : bytes;
    this.left -= taken.length;
    this.text += this.decoder.write(taken);
    this.writeCompleteLines();
  }

  writeCompleteLines() {
    let nl;
    while ((nl = this.text.indexOf('\n')) !== -1) {
      const line = this.text.slice(0, nl).replace(/\r$/, '');
      if (line) this.write(printable(line));
      this.text = this.text.slice(nl + 1);
    }
  }

  // A character left unfinished (by the script, or by the cut at maxBytes) ends as U+FFFD.
  flush() {
    this.text += this.decoder.end();
    if (this.text) this.write(printable(this.text));
    this.text = '';
  }
}

module.exports = { StderrLines };
