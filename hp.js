const p = JSON.parse(require('fs').readFileSync(process.argv[2]));
const self = new Map();
const walk = (n, chain) => { const f = n.callFrame; const k = `${f.functionName || '(anon)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber}`; const s = n.selfSize || 0; if (s) self.set(k, (self.get(k) || 0) + s); for (const c of n.children || []) walk(c, chain); };
walk(p.head, []);
const N = Number(process.argv[3]);
let total = 0; for (const v of self.values()) total += v;
console.log('sampled B/req total', (total / N).toFixed(0));
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log((v / N).toFixed(0).padStart(7), k);
