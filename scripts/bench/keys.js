#!/usr/bin/env node
/*
 * Flow control per key (issue 20): what concurrency keys cost, and what they
 * buy. Sluice and BullMQ on the same Redis, in this process, alternating,
 * several rounds; prints medians and ratios.
 *
 *   npm run bench                      # engine.js, then this (full)
 *   node scripts/bench/keys.js         # full: N=50,000, 3 rounds, 1M-job backlog for fairness
 *   node scripts/bench/keys.js --quick # N=5,000, 1 round, 100k backlog, 10k contrast
 *   ... --only throughput|fairness     # one part
 *   ... --profile                      # + INFO commandstats per processed job (use a private Redis)
 *   ... --dist dist,/tmp/b/dist        # throughput of builds A, B… side by side (each with its lua/ next to its dist/)
 *
 * 1. Throughput: enqueue N jobs (batches of 1,000) with no key, 1 key, 100
 *    keys, 10,000 keys (job i gets key i mod K; round robin, the default once
 *    a queue has keyed jobs), then process them with one in-process
 *    WorkerRuntime at concurrency 50, no-op handler (as engine.js does);
 *    BullMQ's no-key processing in the same rounds as the reference (BullMQ's
 *    open-source edition has no groups). Target: 10,000 keys ≥ 0.8× no key.
 * 2. Fairness latency: BACKLOG jobs of key A, one worker at concurrency 4
 *    running them (no-op), then 10 jobs of key B: the time from B's enqueue
 *    call until B's 10th handler has run, and A's backlog at that moment.
 *    The contrast: the same without keys (B's 10 queue behind A's backlog);
 *    measured on a CONTRAST-job backlog, capped at --timeout-s, and
 *    extrapolated to the keyed run's backlog at the worker's measured rate.
 *
 * Needs `npm run build` (uses dist/) and Redis at REDIS_URL. Each system works
 * under a key prefix of its own, deleted after each run (and on Ctrl-C).
 */
const { performance } = require('node:perf_hooks');
const os = require('node:os');
const path = require('node:path');
const systems = require('./systems');
const { redisQuiet, sleep, median, fmt } = systems;
const REDIS_URL = systems.redisUrl();
const IORedis = require('ioredis');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const QUICK = args.includes('--quick');
const N = Number(opt('n', QUICK ? 5000 : 50000));
const ROUNDS = Number(opt('rounds', QUICK ? 1 : 3));
const CONC = Number(opt('concurrency', 50));
const BACKLOG = Number(opt('backlog', QUICK ? 100000 : 1000000));
const CONTRAST = Number(opt('contrast', QUICK ? 10000 : 50000));
const SAMPLES = Number(opt('samples', QUICK ? 3 : 5));
const TIMEOUT_S = Number(opt('timeout-s', 120));
const ONLY = opt('only', null);
const PROFILE = args.includes('--profile');
const DISTS = (opt('dist', '') || '').split(',').filter(Boolean).map((d) => path.resolve(d));
const BUILDS = DISTS.length ? DISTS : [undefined];
/** 'A: ', 'B: '… when builds are compared, else ''. */
const tagOf = (dist) => (DISTS.length ? `${String.fromCharCode(65 + DISTS.indexOf(dist))}: ` : '');
const FAIR_CONC = 4;
const B_JOBS = 10;
/** A jobs run before the first B batch, so the worker is in its steady state. */
const WARM_JOBS = 2000;

const live = new Set();
/** A Sluice system whose prefix is deleted on exit, whatever happens. */
function tracked(opts) {
  const q = systems.sluice({ inflight: 50, tag: 'keys', ...opts });
  live.add(q);
  return q;
}
async function dispose(q) {
  await q.clean();
  await q.close();
  live.delete(q);
}
process.on('SIGINT', async () => {
  console.error('\ninterrupted: deleting the bench prefixes');
  for (const q of live) await q.clean().catch(() => undefined);
  process.exit(130);
});

/** Redis CPU used so far (user + sys, all its clients), µs. */
async function redisCpu(redis) {
  const info = await redis.info('cpu');
  const v = (k) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)[1]);
  return (v('used_cpu_user') + v('used_cpu_sys')) * 1e6;
}

async function usedMemory(redis) {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1]);
}

const { commandstats } = systems;
function statsDelta(before, after, jobs) {
  const rows = [];
  for (const [cmd, a] of Object.entries(after)) {
    const b = before[cmd] ?? { calls: 0, usec: 0 };
    const calls = a.calls - b.calls;
    if (calls > 0) rows.push({ cmd, callsPerJob: calls / jobs, usecPerJob: (a.usec - b.usec) / jobs, usecPerCall: (a.usec - b.usec) / calls });
  }
  return rows.sort((x, y) => y.usecPerJob - x.usecPerJob);
}

// ----------------------------------------------------------- throughput ---
const KEYED = [
  { label: 'no key', keys: 0 },
  { label: '1 key', keys: 1 },
  { label: '100 keys', keys: 100 },
  { label: '10,000 keys', keys: 10000 },
  // The same keys in lanes mode (a keyConcurrency that never binds, as a
  // queue with limits runs): what limits cost beside plain round robin.
  { label: '10,000 keys, lanes', keys: 10000, lanes: true },
];
const VARIANTS = [...BUILDS.flatMap((dist) => KEYED.map((v) => ({ ...v, dist, label: tagOf(dist) + v.label }))), { label: 'BullMQ, no key', bull: true }];

/** Enqueue N (batches of 1,000), then process them; returns {enqueue, process} jobs/s. */
async function throughput(v, n = N) {
  await redisQuiet();
  if (v.bull) {
    const q = systems.bullmq({ concurrency: CONC, inflight: 50 });
    const enqueue = await q.addBatch(n);
    const r = new IORedis(systems.redisUrl());
    const cpu0 = { node: process.cpuUsage(), redis: await redisCpu(r) };
    const { finished } = await q.process(n);
    const rate = await finished;
    const nodeCpu = process.cpuUsage(cpu0.node);
    const cpu = { node: (nodeCpu.user + nodeCpu.system) / n, redis: ((await redisCpu(r)) - cpu0.redis) / n };
    r.disconnect();
    await q.clean();
    await q.close();
    return { enqueue, process: rate, cpu };
  }
  const q = tracked({ concurrency: CONC, dist: v.dist });
  const keyOf = v.keys ? (i) => `k${i % v.keys}` : undefined;
  // keyConcurrency 100,000 (the API's bound) and slots counted, as
  // PATCH /queues/bench {keyConcurrency} leaves an empty queue's meta.
  if (v.lanes) await q.redis.hset(q.keys('bench').meta, 'kc', 100000, 'kt', '1');
  const enqueue = await q.addBatch(n, 1000, undefined, keyOf);
  const meta = await q.redis.hmget(q.keys('bench').meta, 'km', 'kk', 'fm');
  // Invariant: a keyed run is in round robin (no fairness set, a keyed job
  // seen): turns mode ('t', lua/includes/lanes.lua) without limits, lanes ('1') with.
  if (v.keys && !(meta[0] === (v.lanes ? '1' : 't') && meta[1] === '1' && meta[2] === null)) throw new Error(`not in round-robin ${v.lanes ? 'lanes' : 'turns'} mode: ${meta}`);
  if (!v.keys && meta[0] !== null) throw new Error('a no-key run went into lanes mode');
  const before = PROFILE ? await commandstats(q.redis) : null;
  // CPU per job: steadier than jobs/s on a shared machine (time spent waiting
  // for a core is not counted). Node: this process; Redis: the server (any
  // other client of a shared Redis counts too).
  const cpu0 = { node: process.cpuUsage(), redis: await redisCpu(q.redis) };
  const { finished } = await q.process(n);
  const rate = await finished;
  const nodeCpu = process.cpuUsage(cpu0.node);
  const cpu = { node: (nodeCpu.user + nodeCpu.system) / n, redis: ((await redisCpu(q.redis)) - cpu0.redis) / n };
  const profile = PROFILE ? statsDelta(before, await commandstats(q.redis), n) : null;
  await dispose(q);
  return { enqueue, process: rate, cpu, profile };
}

async function throughputRounds() {
  const res = Object.fromEntries(VARIANTS.map((v) => [v.label, { enqueue: [], process: [], node: [], redis: [] }]));
  for (let round = 1; round <= ROUNDS; round++) {
    // Rotate the order each round, so no variant always runs first or last.
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round - 1) % VARIANTS.length]);
    for (const v of order) {
      const r = await throughput(v);
      res[v.label].enqueue.push(r.enqueue);
      res[v.label].process.push(r.process);
      res[v.label].node.push(r.cpu.node);
      res[v.label].redis.push(r.cpu.redis);
      console.log(`round ${round} ${v.label.padEnd(18)} enqueue ${fmt(r.enqueue).padStart(7)}/s  process ${fmt(r.process).padStart(7)}/s  CPU per job: Node ${r.cpu.node.toFixed(1)} µs, Redis ${r.cpu.redis.toFixed(1)} µs`);
      if (r.profile) {
        console.log('    INFO commandstats while processing, per job: command calls µs (µs/call)');
        for (const p of r.profile.slice(0, 20)) console.log(`    ${p.cmd.padEnd(16)} ${p.callsPerJob.toFixed(2).padStart(6)} ${p.usecPerJob.toFixed(2).padStart(7)} (${p.usecPerCall.toFixed(2)})`);
      }
    }
  }
  console.log(`\nthroughput, medians of ${ROUNDS} rounds (N=${fmt(N)}, concurrency ${CONC}); ratios: median of the per-round ratios to Sluice's no-key run (of the same build) in the same round`);
  const ratioOf = (label, baseLabel) => median(res[label].process.map((x, i) => x / res[baseLabel].process[i]));
  for (const v of VARIANTS) {
    const r = res[v.label];
    const baseLabel = `${tagOf(v.bull ? BUILDS[0] : v.dist)}no key`;
    const ratio = ratioOf(v.label, baseLabel);
    const redisRatio = median(r.redis.map((x, i) => x / res[baseLabel].redis[i]));
    console.log(`  ${v.label.padEnd(18)} enqueue ${fmt(median(r.enqueue)).padStart(7)}/s  process ${fmt(median(r.process)).padStart(7)}/s  ${ratio.toFixed(2)}x no key  (rounds: ${r.process.map(fmt).join(', ')}); CPU per job Node ${median(r.node).toFixed(1)} µs, Redis ${median(r.redis).toFixed(1)} µs (${v.bull ? '-' : redisRatio.toFixed(2) + 'x no key'})`);
  }
  for (const dist of BUILDS) {
    const k10 = ratioOf(`${tagOf(dist)}10,000 keys`, `${tagOf(dist)}no key`);
    const bull = ratioOf(`${tagOf(dist)}no key`, 'BullMQ, no key');
    console.log(`  ${tagOf(dist)}target: 10,000 keys ≥ 0.80x no key: ${k10.toFixed(2)}x — ${k10 >= 0.8 ? 'met' : 'NOT met'}; Sluice no key / BullMQ no key: ${bull.toFixed(2)}x`);
  }
  for (const dist of DISTS.slice(1)) {
    console.log(`  ${tagOf(dist).slice(0, 1)} / A, same variant, median of per-round ratios: ${KEYED.map((v) => `${v.label} ${ratioOf(tagOf(dist) + v.label, tagOf(DISTS[0]) + v.label).toFixed(2)}x`).join(', ')}`);
  }
}

// ------------------------------------------------------------- fairness ---
/**
 * A backlog of `backlog` A jobs (key 'A', or none), one worker at
 * concurrency 4 running them; `samples` times, 10 B jobs (key 'B', or none)
 * are enqueued in one call and timed until the 10th B handler has run.
 * @returns per sample {ms, backlogAtEnqueue, backlogAfter, aMeanwhile}, the
 *   worker's A rate (jobs/s), Redis bytes per waiting job; a sample that did
 *   not finish within the timeout has ms = null.
 */
async function fairness({ keyed, backlog, samples }) {
  const q = tracked({ concurrency: FAIR_CONC, dist: BUILDS[0] });
  const k = q.keys('bench');
  const mem0 = await usedMemory(q.redis);
  const t0 = performance.now();
  await q.addBatch(backlog, 1000, undefined, keyed ? () => 'A' : undefined);
  const enqueueRate = backlog / ((performance.now() - t0) / 1000);
  // The audit writer would have drained the enqueued events; Redis memory is what remains.
  await q.redis.xtrim(k.events, 'MAXLEN', 0);
  const bytesPerJob = ((await usedMemory(q.redis)) - mem0) / backlog;
  await sleep(1000); // Redis finishes growing the keyspace (incremental rehash)

  let bDone = 0;
  let onB = null;
  const proc = await q.process(Infinity, (_ctx, p) => {
    if (p.b !== undefined && ++bDone === B_JOBS) onB();
  });
  while (proc.done() < WARM_JOBS) await sleep(20);
  const out = [];
  const rate0 = { t: performance.now(), done: proc.done() };
  for (let s = 0; s < samples; s++) {
    bDone = 0;
    const backlogAtEnqueue = await q.redis.zcard(k.waiting);
    const doneAt0 = proc.done();
    const bJobs = Array.from({ length: B_JOBS }, (_, j) => (keyed ? { ...systems.normalize({ b: j }), concurrencyKey: 'B' } : systems.normalize({ b: j })));
    let tb = 0;
    let timer;
    const r = await Promise.race([
      new Promise((resolve) => {
        onB = () => {
          const ms = performance.now() - tb;
          const a = proc.done() - doneAt0 - B_JOBS;
          // Read at once (the next command on the connection): A's backlog when B finished.
          q.redis.zcard(k.waiting).then((w) => resolve({ ms, w, a }));
        };
        tb = performance.now();
        q.store.enqueue(bJobs);
      }),
      new Promise((resolve) => (timer = setTimeout(resolve, TIMEOUT_S * 1000, null))),
    ]);
    clearTimeout(timer);
    const backlogAfter = r ? r.w : await q.redis.zcard(k.waiting);
    out.push({ ms: r ? r.ms : null, backlogAtEnqueue, backlogAfter, aMeanwhile: r ? r.a : proc.done() - doneAt0 - bDone });
    if (!r) break;
    await sleep(200);
  }
  const rate = (proc.done() - rate0.done) / ((performance.now() - rate0.t) / 1000);
  await proc.rt.stop();
  await dispose(q);
  return { samples: out, rate, bytesPerJob, enqueueRate };
}

async function fairnessRuns() {
  console.log(`\nfairness: ${fmt(BACKLOG)} jobs of key A, worker at concurrency ${FAIR_CONC} (no-op), then ${B_JOBS} jobs of key B, ${SAMPLES} times`);
  const keyed = await fairness({ keyed: true, backlog: BACKLOG, samples: SAMPLES });
  console.log(`  enqueue of the backlog ${fmt(keyed.enqueueRate)} jobs/s; Redis ${fmt(keyed.bytesPerJob)} B per waiting job (events stream trimmed); A processed at ${fmt(keyed.rate)} jobs/s`);
  for (const s of keyed.samples) {
    console.log(`  B's 10 done in ${s.ms === null ? `> ${TIMEOUT_S} s` : `${s.ms.toFixed(1)} ms`}; A backlog ${fmt(s.backlogAtEnqueue)} at B's enqueue, ${fmt(s.backlogAfter)} when B finished; ${s.aMeanwhile} A jobs ran meanwhile`);
  }
  const kMs = median(keyed.samples.map((s) => s.ms ?? Infinity));
  const kBacklog = median(keyed.samples.map((s) => s.backlogAtEnqueue));
  console.log(`  median: ${kMs.toFixed(1)} ms, with ${fmt(median(keyed.samples.map((s) => s.backlogAfter)))} A jobs still waiting`);

  console.log(`\ncontrast, no keys: ${fmt(CONTRAST)} unkeyed A jobs, then ${B_JOBS} unkeyed B jobs, ${ROUNDS} round(s), each capped at ${TIMEOUT_S} s`);
  const runs = [];
  for (let r = 0; r < ROUNDS; r++) {
    const c = await fairness({ keyed: false, backlog: CONTRAST, samples: 1 });
    const s = c.samples[0];
    runs.push({ ...s, rate: c.rate });
    console.log(`  B's 10 done in ${s.ms === null ? `> ${TIMEOUT_S} s (did not finish; ${fmt(s.backlogAfter)} A jobs still ahead)` : `${(s.ms / 1000).toFixed(2)} s`}; A backlog ${fmt(s.backlogAtEnqueue)} at B's enqueue, ${fmt(s.backlogAfter)} when B finished; worker ${fmt(c.rate)} jobs/s`);
  }
  const finished = runs.filter((s) => s.ms !== null);
  if (finished.length) {
    const cMs = median(finished.map((s) => s.ms));
    const cRate = median(runs.map((s) => s.rate));
    const extrapolated = kBacklog / cRate;
    console.log(`  median: ${(cMs / 1000).toFixed(2)} s behind ${fmt(median(finished.map((s) => s.backlogAtEnqueue)))} jobs; at ${fmt(cRate)} jobs/s, behind the keyed run's ${fmt(kBacklog)} it would take ~${extrapolated.toFixed(0)} s (extrapolated), ${fmt((extrapolated * 1000) / kMs)}x the keyed ${kMs.toFixed(1)} ms`);
  } else {
    console.log(`  did not finish within ${TIMEOUT_S} s in any round`);
  }
}

async function main() {
  console.log(`machine: ${os.cpus().length}x ${os.cpus()[0].model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}, Redis ${REDIS_URL}`);
  const r = new IORedis(REDIS_URL);
  console.log(`Redis used_memory before: ${fmt((await usedMemory(r)) / 2 ** 20)} MiB`);
  r.disconnect();
  if (ONLY !== 'fairness') {
    // Warm-up, not recorded: JIT-compile both systems' code and load the scripts.
    for (const v of VARIANTS.filter((x) => x.bull || x.keys === 0 || x.keys === 100)) await throughput(v, Math.min(N, 10000));
    await throughputRounds();
  }
  if (ONLY !== 'throughput') await fairnessRuns();
  process.exit(0);
}

main().catch(async (e) => {
  console.error(e);
  for (const q of live) await q.clean().catch(() => undefined);
  process.exit(1);
});
