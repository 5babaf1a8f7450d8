#!/usr/bin/env node
/*
 * Engine benchmark: Sluice vs BullMQ on the same Redis, same process, same
 * machine, alternating, several rounds; prints medians and ratios.
 *
 *   npm run bench                    # full run (N=50,000, 3 rounds)
 *   node dist/../scripts/bench/engine.js --n 5000 --rounds 1 --skip-flat   # quick
 *   ... --write docs/benchmarks.md   # also write the results table
 *
 * Needs `npm run build` (uses dist/) and Redis at REDIS_URL.
 */
const { performance } = require('node:perf_hooks');
const os = require('node:os');
const fs = require('node:fs');
const systems = require('./systems');
const { redisQuiet, sleep, median, pct, fmt } = systems;

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const N = Number(opt('n', 50000));
const ROUNDS = Number(opt('rounds', 3));
const CONC = Number(opt('concurrency', 50));
const INFLIGHT = 50;
const SKIP_FLAT = args.includes('--skip-flat');
const ONLY_FLAT = args.includes('--only-flat');
const WRITE = opt('write', null);
const sluice = () => systems.sluice({ concurrency: CONC, inflight: INFLIGHT });
const bullmq = () => systems.bullmq({ concurrency: CONC, inflight: INFLIGHT });

// ------------------------------------------------------------- scenarios ---
async function enqueueSingle(make, n = N) {
  const q = make();
  const r = await q.addSingle(n);
  await q.clean();
  await q.close();
  return r;
}
async function enqueueBatch(make, n = N) {
  const q = make();
  const r = await q.addBatch(n);
  await q.clean();
  await q.close();
  return r;
}
async function processing(make, n = N, prefill = N) {
  const q = make();
  await q.addBatch(prefill);
  const { finished } = await q.process(n);
  const r = await finished;
  await q.clean();
  await q.close();
  return r;
}

/** Idle worker: time from the enqueue call to the handler's start, ms. */
async function latency(make, samples = 500) {
  await redisQuiet();
  const q = make();
  const lat = [];
  let t0 = 0;
  let started;
  const { finished } = await q.process(samples, () => {
    lat.push(performance.now() - t0);
    started();
  });
  await sleep(300); // let the worker go idle (blocked on its wake-up key)
  for (let i = 0; i < samples; i++) {
    const s = new Promise((r) => (started = r));
    t0 = performance.now();
    await q.addSingle(1);
    await s;
    await sleep(2);
  }
  await finished;
  await q.clean();
  await q.close();
  return { p50: pct(lat, 50), p99: pct(lat, 99) };
}

async function memoryPerWaitingJob() {
  const q = sluice();
  const info = async () => Number(/used_memory:(\d+)/.exec(await q.redis.info('memory'))[1]);
  const n = 100000;
  const payload = { data: 'x'.repeat(100 - 11) }; // serialized: 100 bytes
  if (JSON.stringify(payload).length !== 100) throw new Error('payload size');
  const before = await info();
  await q.addBatch(n, 1000, payload);
  const withStream = (await info()) - before;
  await q.redis.xtrim(q.keys('bench').events, 'MAXLEN', 0);
  const withoutStream = (await info()) - before;
  await q.clean();
  q.close();
  return { withStream: withStream / n, withoutStream: withoutStream / n };
}

/** Processing rate of `count` jobs taken from a backlog of `backlog` waiting jobs. */
async function flatness(backlog, count) {
  const q = sluice();
  await q.addBatch(backlog, 5000);
  await q.redis.xtrim(q.keys('bench').events, 'MAXLEN', 0); // the audit writer would have drained it
  // Let Redis finish growing its keyspace (incremental rehash) and freeing the
  // previous round's keys (lazyfree), so the steady state is what is measured.
  await sleep(3000);
  const { finished } = await q.process(count);
  const r = await finished;
  await q.clean();
  q.close();
  return r;
}

async function main() {
  const results = {};
  const record = (k, v) => (results[k] = results[k] || []).push(v);
  console.log(`machine: ${os.cpus().length}x ${os.cpus()[0].model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`);
  console.log(`N=${N} concurrency=${CONC} in-flight adds=${INFLIGHT} rounds=${ROUNDS}\n`);
  if (!ONLY_FLAT) {
    // Warm-up, not recorded: both systems' code is JIT-compiled before the first
    // measured round (otherwise whichever runs first in round 1 pays for it).
    for (const make of [sluice, bullmq]) {
      await enqueueSingle(make, 10000);
      await enqueueBatch(make, 10000);
      await processing(make, 10000, 10000);
    }
  }
  for (let round = 1; round <= (ONLY_FLAT ? 0 : ROUNDS); round++) {
    // Alternate which system goes first in each round.
    const order = round % 2 ? [sluice, bullmq] : [bullmq, sluice];
    for (const make of order) {
      const label = make === sluice ? 'Sluice' : 'BullMQ';
      const s = await enqueueSingle(make);
      const b = await enqueueBatch(make);
      const p = await processing(make);
      const l = await latency(make);
      record(`${label} enqueue single`, s);
      record(`${label} enqueue batch`, b);
      record(`${label} process`, p);
      record(`${label} latency p50`, l.p50);
      record(`${label} latency p99`, l.p99);
      console.log(`round ${round} ${label}: enqueue single ${fmt(s)}/s, batch ${fmt(b)}/s, process ${fmt(p)}/s, idle latency p50 ${l.p50.toFixed(2)} ms p99 ${l.p99.toFixed(2)} ms`);
    }
  }
  const mem = ONLY_FLAT ? { withStream: NaN, withoutStream: NaN } : await memoryPerWaitingJob();
  console.log(`\nRedis memory per waiting job (100-byte payload): ${fmt(mem.withoutStream)} B (events drained), ${fmt(mem.withStream)} B (enqueued events still in the stream)`);
  let flat = null;
  if (!SKIP_FLAT) {
    const small = [];
    const large = [];
    for (let r = 0; r < ROUNDS; r++) {
      small.push(await flatness(10000, 10000));
      large.push(await flatness(1000000, 10000));
    }
    flat = { small: median(small), large: median(large) };
    console.log(`claiming flatness: 10,000 jobs from a 10k backlog ${fmt(flat.small)}/s, from a 1M backlog ${fmt(flat.large)}/s, ratio ${(flat.large / flat.small).toFixed(2)} (rounds: ${small.map(fmt).join(', ')} vs ${large.map(fmt).join(', ')})`);
    if (ONLY_FLAT) process.exit(0);
  }
  const m = (k) => median(results[k]);
  const rows = [
    ['enqueue, single adds (50 in flight), jobs/s', m('Sluice enqueue single'), m('BullMQ enqueue single'), 'enqueue single'],
    ['enqueue, batches of 1,000, jobs/s', m('Sluice enqueue batch'), m('BullMQ enqueue batch'), 'enqueue batch'],
    [`processing, no-op, concurrency ${CONC}, jobs/s`, m('Sluice process'), m('BullMQ process'), 'process'],
  ];
  // The two systems of a round run back to back, so their ratio is the paired
  // comparison; this machine changes speed between rounds, which the ratio of
  // the two medians (taken over different rounds) does not cancel out.
  const pairedRatio = (metric) => median(results[`Sluice ${metric}`].map((v, i) => v / results[`BullMQ ${metric}`][i]));
  console.log(`\nmedians of ${ROUNDS} rounds:`);
  const table = ['| measure | Sluice | BullMQ 6.7 | ratio of medians | median of per-round ratios |', '|---|---:|---:|---:|---:|'];
  for (const [k, a, b, metric] of rows) {
    const paired = pairedRatio(metric);
    console.log(`  ${k}: Sluice ${fmt(a)}  BullMQ ${fmt(b)}  ratio ${(a / b).toFixed(2)}x  (median of per-round ratios ${paired.toFixed(2)}x)`);
    table.push(`| ${k} | ${fmt(a)} | ${fmt(b)} | ${(a / b).toFixed(2)}x | ${paired.toFixed(2)}x |`);
  }
  const lat = `idle worker, enqueue → handler start: Sluice p50 ${m('Sluice latency p50').toFixed(2)} ms, p99 ${m('Sluice latency p99').toFixed(2)} ms; BullMQ p50 ${m('BullMQ latency p50').toFixed(2)} ms, p99 ${m('BullMQ latency p99').toFixed(2)} ms`;
  console.log('  ' + lat);
  if (WRITE) {
    const md = [
      `### Engine run of ${new Date().toISOString().slice(0, 10)}`,
      '',
      `Machine: ${os.cpus().length}× ${os.cpus()[0].model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, Redis on the same host.`,
      `Command: \`node scripts/bench/engine.js --n ${N} --rounds ${ROUNDS}\` (after \`npm run build\`). Medians of ${ROUNDS} alternating rounds.`,
      '',
      ...table,
      '',
      `- ${lat}`,
      `- Redis memory per waiting job, 100-byte payload: ${fmt(mem.withoutStream)} bytes with the events stream drained (steady state with the audit writer), ${fmt(mem.withStream)} bytes while the enqueued events are still in the stream.`,
      flat ? `- Claiming from a 1,000,000-job backlog vs a 10,000-job backlog: ${fmt(flat.large)} vs ${fmt(flat.small)} jobs/s, ratio ${(flat.large / flat.small).toFixed(2)}.` : '',
      '',
    ].join('\n');
    fs.appendFileSync(WRITE, md + '\n');
    console.log(`\nappended to ${WRITE}`);
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
