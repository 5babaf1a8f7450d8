#!/usr/bin/env node
/*
 * Before/after in one run: the engine bench (scripts/bench/engine.js) and the
 * HTTP bench (scripts/bench/http.js) of two builds, alternated round by
 * round (A, B, A, B, …) so both see the same machine, then medians and
 * ranges side by side.
 *
 *   node scripts/bench/ab.js --a /path/to/old/checkout --b . --rounds 5
 *   node scripts/bench/ab.js --a /tmp/old --b . --only engine --n 20000
 *
 * Each checkout must be built (`npx nest build`: dist/ beside its scripts/).
 * The engine rounds run each tree's own engine.js (its own dist/); the HTTP
 * rounds run this tree's http.js against each tree's dist/main.js (--main),
 * so the load generator is the same for both. Needs what those two need:
 * Redis at REDIS_URL, PostgreSQL at DATABASE_URL's server.
 */
const { execFileSync } = require('node:child_process');
const path = require('node:path');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const A = path.resolve(opt('a', '.'));
const B = path.resolve(opt('b', '.'));
const ROUNDS = Number(opt('rounds', 5));
const N = opt('n', '20000');
const ONLY = opt('only', null);
const DURATION = opt('duration', '5');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const num = (s) => Number(String(s).replace(/,/g, ''));

/** One engine round of a tree: Sluice's and BullMQ's figures of that round (ops/s, ms). */
function engineRound(tree) {
  const out = execFileSync('node', [path.join(tree, 'scripts/bench/engine.js'), '--n', N, '--rounds', '1', '--skip-flat'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const pick = (label) => {
    const m = new RegExp(`round 1 ${label}: enqueue single ([\\d,]+)/s, batch ([\\d,]+)/s, process ([\\d,]+)/s, idle latency p50 ([\\d.]+) ms p99 ([\\d.]+) ms`).exec(out);
    if (!m) throw new Error(`engine.js of ${tree}: no "${label}" line in\n${out}`);
    return { single: num(m[1]), batch: num(m[2]), process: num(m[3]), p50: num(m[4]), p99: num(m[5]) };
  };
  return { sluice: pick('Sluice'), bull: pick('BullMQ') };
}

/** One HTTP round against a tree's build: req/s and server CPU per request. */
function httpRound(tree) {
  const out = execFileSync('node', [path.join(__dirname, 'http.js'), '--rounds', '1', '--duration', DURATION, '--main', path.join(tree, 'dist/main.js')], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const line = (label) => {
    const m = new RegExp(`${label}\\s+([\\d,]+) req/s.*server CPU (\\d+) µs/req`).exec(out);
    if (!m) throw new Error(`http.js against ${tree}: no "${label}" line in\n${out}`);
    return { rps: num(m[1]), cpuUs: num(m[2]) };
  };
  return { noop: line('GET /healthz'), post: line('POST /jobs') };
}

function summary(label, xs, unit = '') {
  const fmt = (x) => (Math.abs(x) >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(2));
  return `${label} ${fmt(median(xs))}${unit} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`;
}

function main() {
  console.log(`A = ${A}\nB = ${B}\n${ROUNDS} alternating rounds (A then B each round)\n`);
  if (ONLY !== 'http') {
    const rows = { A: [], B: [] };
    for (let r = 1; r <= ROUNDS; r++) {
      for (const [k, tree] of [['A', A], ['B', B]]) {
        const x = engineRound(tree);
        rows[k].push(x);
        console.log(`engine round ${r} ${k}: single ${x.sluice.single}/s, batch ${x.sluice.batch}/s, process ${x.sluice.process}/s, p99 ${x.sluice.p99} ms (BullMQ ${x.bull.single}, ${x.bull.batch}, ${x.bull.process}, p99 ${x.bull.p99})`);
      }
    }
    console.log(`\nengine, N=${N}, medians (ranges) of ${ROUNDS} rounds:`);
    for (const f of ['single', 'batch', 'process']) {
      const ratio = (k) => rows[k].map((x) => x.sluice[f] / x.bull[f]);
      console.log(`  ${f.padEnd(7)} ${summary('A', rows.A.map((x) => x.sluice[f]), '/s')}  ${summary('B', rows.B.map((x) => x.sluice[f]), '/s')}  B/A ${(median(rows.B.map((x) => x.sluice[f])) / median(rows.A.map((x) => x.sluice[f]))).toFixed(3)}  vs BullMQ: ${summary('A', ratio('A'), 'x')} ${summary('B', ratio('B'), 'x')}`);
    }
    console.log(`  idle p99 ${summary('A', rows.A.map((x) => x.sluice.p99), ' ms')}  ${summary('B', rows.B.map((x) => x.sluice.p99), ' ms')}`);
  }
  if (ONLY !== 'engine') {
    const rows = { A: [], B: [] };
    for (let r = 1; r <= ROUNDS; r++) {
      for (const [k, tree] of [['A', A], ['B', B]]) {
        const x = httpRound(tree);
        rows[k].push(x);
        console.log(`http round ${r} ${k}: GET /healthz ${x.noop.rps} req/s (${x.noop.cpuUs} µs), POST /jobs ${x.post.rps} req/s (${x.post.cpuUs} µs)`);
      }
    }
    console.log(`\nhttp, ${DURATION} s per run, medians (ranges) of ${ROUNDS} rounds:`);
    for (const f of ['noop', 'post']) {
      const rps = (k) => rows[k].map((x) => x[f].rps);
      const cpu = (k) => rows[k].map((x) => x[f].cpuUs);
      console.log(`  ${f === 'noop' ? 'GET /healthz' : 'POST /jobs  '} ${summary('A', rps('A'), ' req/s')}  ${summary('B', rps('B'), ' req/s')}  B/A ${(median(rps('B')) / median(rps('A'))).toFixed(3)}; server CPU ${summary('A', cpu('A'), ' µs')} ${summary('B', cpu('B'), ' µs')}`);
    }
  }
}

main();
