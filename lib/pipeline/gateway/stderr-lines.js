'use strict';
// A script's stderr (FastCGI's FCGI_STDERR records, a CGI process's stderr) as error log lines:
// one line each, prefixed with who wrote it, at most maxBytes per request so that a script
// writing without end cannot flood the log.
//
//   const lines = new StderrLines(write(line), maxBytes)
//   lines.push(bytes)   whole lines go out as they complete
//   lines.flush()       the last line, unfinished or not (the script's end)

class StderrLines {
  constructor(write, maxBytes) {
    this.write = write;
    this.left = maxBytes;
    this.text = '';
  }

  push(bytes) {
    if (this.left <= 0) return;
    this.left -= bytes.length;
    this.text += bytes.toString('utf8');
    let nl;
    while ((nl = this.text.indexOf('\n')) !== -1) {
      const line = this.text.slice(0, nl).replace(/\r$/, '');
      if (line) this.write(line);
      this.text = this.text.slice(nl + 1);
    }
  }

  flush() {
    if (this.text) this.write(this.text);
    this.text = '';
  }
}

module.exports = { StderrLines };
