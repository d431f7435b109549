'use strict';
// The ratios chart: one horizontal bar per scenario and peer (svr/peer, median requests/s), on a
// logarithmic axis centred on 1× so that 0.5× and 2× are the same length either side. A small SVG
// writer of our own: strings in, one self-contained SVG document out.

const ROW_HEIGHT = 20;
const LABEL_WIDTH = 300;
const PLOT_WIDTH = 460;
const VALUE_WIDTH = 70;
const TOP = 56;
const BOTTOM = 36;
const TICKS = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100];
const COLOURS = { below: '#d9822b', above: '#2f7d4f', axis: '#555', grid: '#ddd', text: '#222' };

function escapeXml(text) {
  return String(text).replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]);
}

// The bars: every finite ratio of results.ratios (svr/peer per scenario) and of the blog table.
function chartBars(results) {
  const bars = [];
  for (const row of results.ratios || []) {
    for (const [peer, ratio] of Object.entries(row.ratios)) {
      if (Number.isFinite(ratio) && ratio > 0) bars.push({ label: `${row.scenario} · ${peer}`, ratio });
    }
  }
  for (const row of results.blog || []) {
    for (const [name, ratio] of Object.entries(row.ratios)) {
      if (Number.isFinite(ratio) && ratio > 0) bars.push({ label: `${row.scenario} · ${name}`, ratio });
    }
  }
  return bars;
}

// The axis: from the tick at or below the smallest ratio (at most 0.5) to the tick at or above the
// largest (at least 2).
function axisRange(bars) {
  const low = Math.min(0.5, ...bars.map((bar) => bar.ratio));
  const high = Math.max(2, ...bars.map((bar) => bar.ratio));
  const min = [...TICKS].reverse().find((tick) => tick <= low) || TICKS[0];
  const max = TICKS.find((tick) => tick >= high) || TICKS[TICKS.length - 1];
  return { min, max, ticks: TICKS.filter((tick) => tick >= min && tick <= max) };
}

function scaleX(range) {
  const span = Math.log(range.max) - Math.log(range.min);
  return (ratio) => {
    const clamped = Math.min(range.max, Math.max(range.min, ratio));
    return LABEL_WIDTH + ((Math.log(clamped) - Math.log(range.min)) / span) * PLOT_WIDTH;
  };
}

function text(x, y, content, attributes = '') {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attributes}>${escapeXml(content)}</text>`;
}

function formatRatio(ratio) {
  return `${ratio < 10 ? ratio.toFixed(2) : ratio.toFixed(1)}×`;
}

// bars: [{ label, ratio }]; title and subtitle: one line each.
function renderChart(bars, { title = 'svr / peer', subtitle = '' } = {}) {
  const range = axisRange(bars);
  const x = scaleX(range);
  const width = LABEL_WIDTH + PLOT_WIDTH + VALUE_WIDTH;
  const height = TOP + bars.length * ROW_HEIGHT + BOTTOM;
  const plotBottom = TOP + bars.length * ROW_HEIGHT;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    text(8, 20, title, `font-size="15" font-weight="bold" fill="${COLOURS.text}"`),
    text(8, 38, subtitle, `fill="${COLOURS.axis}"`),
  ];
  for (const tick of range.ticks) {
    const tx = x(tick);
    parts.push(`<line x1="${tx.toFixed(1)}" y1="${TOP - 4}" x2="${tx.toFixed(1)}" y2="${plotBottom}" stroke="${tick === 1 ? COLOURS.axis : COLOURS.grid}"/>`);
    parts.push(text(tx, plotBottom + 16, `${tick}×`, `text-anchor="middle" fill="${COLOURS.axis}"`));
  }
  bars.forEach((bar, i) => {
    const y = TOP + i * ROW_HEIGHT;
    const [from, to] = [x(1), x(bar.ratio)].sort((a, b) => a - b);
    const colour = bar.ratio < 1 ? COLOURS.below : COLOURS.above;
    parts.push(text(LABEL_WIDTH - 8, y + 14, bar.label, `text-anchor="end" fill="${COLOURS.text}"`));
    parts.push(`<rect x="${from.toFixed(1)}" y="${y + 4}" width="${Math.max(1, to - from).toFixed(1)}" height="${ROW_HEIGHT - 8}" fill="${colour}"/>`);
    parts.push(text(LABEL_WIDTH + PLOT_WIDTH + 6, y + 14, formatRatio(bar.ratio), `fill="${COLOURS.text}"`));
  });
  parts.push(text(x(1), plotBottom + 30, 'svr slower ◀ 1× ▶ svr faster', `text-anchor="middle" fill="${COLOURS.axis}"`));
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

module.exports = { chartBars, renderChart, axisRange, escapeXml };
