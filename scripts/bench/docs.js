'use strict';
// From a results JSON to docs/performance.svg (the ratios chart) and the generated block of
// docs/performance-latest.md (machine, commit, date, tables), between marker comments so that
// text around them is kept. Written after a complete run, or with --docs; --no-docs never.
const fs = require('fs');
const path = require('path');
const { chartBars, renderChart } = require('./chart');
const { resultsTable, ratiosTable, blogTable, processTable, idleRssNote, labelsList, cpuSection } = require('./report');
const { targetsSection } = require('./targets');

const START_MARKER = '<!-- bench:latest:start (written by npm run bench; edits between the markers are overwritten) -->';
const END_MARKER = '<!-- bench:latest:end -->';
const MARKDOWN_FILE = path.join('docs', 'performance-latest.md');
const SVG_FILE = path.join('docs', 'performance.svg');

const NEW_PAGE = `# Latest benchmark run

The block below is written by \`npm run bench\` from its results JSON (\`.bench/results-<date>.json\`),
after a complete run or with \`--docs\`. The chart beside it is \`performance.svg\`.

${START_MARKER}
${END_MARKER}
`;

function shouldWrite(options) {
  if (options.docs === true || options.docs === false) return options.docs;
  return !options.only.length && !options.servers.length; // auto: only a complete run
}

function loadAverage(values) {
  return values ? values.join(' ') : '–';
}

// ", kernel page-table isolation on (meltdown: ...)" from the line the run recorded
// (bench/machine.js), or nothing for a results file from before it was recorded.
function isolationNote(machine) {
  const meltdown = machine.mitigations && machine.mitigations.meltdown;
  if (typeof meltdown !== 'string') return '';
  return `, kernel page-table isolation ${/\bPTI\b/.test(meltdown) ? 'on' : 'off'} (meltdown: ${meltdown})`;
}

function runDescription(meta) {
  const { options, machine, versions } = meta;
  const tools = Object.entries(versions || {}).filter(([, version]) => version).map(([name, version]) => `${name} ${version}`).join(', ');
  return [
    `- **Date**: ${meta.date}`,
    `- **Commit measured**: \`${meta.commit ? meta.commit.label : 'unknown'}\``,
    `- **Machine**: ${machine.cpuModel}, ${machine.nproc} cores, ${machine.memoryGiB} GiB, ${machine.kernel}${isolationNote(machine)}; load average ${loadAverage(machine.loadAverageAtStart)} at the start, ${loadAverage(machine.loadAverageAtEnd)} at the end (1, 5, 15 min)`,
    `- **Run**: rounds: ${options.runs} × ${options.duration} s, after ${options.warmup} s of warm-up per cell (per round in the CPU rows), load tool with ${options.threads} thread(s) and ${options.connections} connections unless the scenario says otherwise, on the same machine; ${meta.workers} workers for svr, nginx, the bare cluster and the node ceiling${meta.schedulingPolicy ? `; NODE_CLUSTER_SCHED_POLICY=${meta.schedulingPolicy}` : ''}`,
    `- **Tools**: ${tools}${meta.certificate ? `; HTTPS certificate ${meta.certificate}, self-signed, the same for svr and nginx` : ''}`,
  ].join('\n');
}

function renderMarkdown(results, svgName = 'performance.svg') {
  const parts = [
    runDescription(results.meta),
    '',
    ...targetsSection(results),
    `![svr/peer ratios of this run](${svgName})`,
    '',
    'Ratios of median requests/s, in brackets the lowest and highest ratio within one round (–: one side not measured; n/c: not comparable, a check failed or errors > 0.1%):',
    '',
    ratiosTable(results.ratios),
    '',
    ...cpuSection(results.cpuPerRequest),
  ];
  if (results.blog && results.blog.length) parts.push("The SVR.JS blog workload (NODE_CLUSTER_SCHED_POLICY per column; svr's default is none (schedulingPolicy), Node's rr, which PM2 and SVR.JS run under):", '', blogTable(results.blog), '');
  if (results.scenarioLabels && Object.keys(results.scenarioLabels).length) parts.push('What some scenarios compare:', '', labelsList(results.scenarioLabels), '');
  parts.push('Every cell:', '', resultsTable(results.cells), '', 'Processes (RSS per serving process):', '', processTable(results.instances));
  for (const line of idleRssNote(results.instances)) parts.push('', line);
  return parts.join('\n');
}

// Replaces what is between the markers (or appends the markers when the page has none).
function replaceBetweenMarkers(page, block) {
  const start = page.indexOf(START_MARKER);
  const end = page.indexOf(END_MARKER);
  const wrapped = `${START_MARKER}\n${block}\n${END_MARKER}`;
  if (start === -1 || end === -1 || end < start) return `${page.replace(/\s*$/, '\n\n')}${wrapped}\n`;
  return page.slice(0, start) + wrapped + page.slice(end + END_MARKER.length);
}

function chartSubtitle(meta) {
  const commit = meta.commit ? meta.commit.label : 'unknown commit';
  return `${meta.date.slice(0, 16).replace('T', ' ')} UTC, ${commit}, ${meta.machine.nproc} cores, load ${loadAverage(meta.machine.loadAverageAtStart)}`;
}

function writeDocs({ jsonFile, options, root, log }) {
  if (!shouldWrite(options)) {
    log('docs not written (a partial run; --docs writes them anyway)');
    return null;
  }
  const results = JSON.parse(fs.readFileSync(jsonFile, 'utf8'));
  const svg = path.join(root, SVG_FILE);
  const markdown = path.join(root, MARKDOWN_FILE);
  fs.mkdirSync(path.dirname(svg), { recursive: true });
  fs.writeFileSync(svg, renderChart(chartBars(results), { title: 'svr / peer, median requests/s (log scale)', subtitle: chartSubtitle(results.meta) }));
  const page = fs.existsSync(markdown) ? fs.readFileSync(markdown, 'utf8') : NEW_PAGE;
  fs.writeFileSync(markdown, replaceBetweenMarkers(page, renderMarkdown(results, path.basename(svg))));
  return { svg, markdown };
}

module.exports = { writeDocs, renderMarkdown, replaceBetweenMarkers, shouldWrite, START_MARKER, END_MARKER };
