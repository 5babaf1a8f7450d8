#!/usr/bin/env node
/*
 * Where the Redis time of flow control per key goes: the claim and complete
 * scripts timed inside Redis, per job, with no key and with 1 / 100 / 10,000
 * concurrency keys, optionally for two builds side by side. A private
 * redis-server (no persistence, a port of its own) so SLOWLOG, INFO cpu and
 * INFO commandstats see nothing but this; it is stopped at the end.
 *
 *   npm run build && node scripts/bench/keys-claim.js
 *   ... --dist dist,/tmp/b/dist,/tmp/c/dist   # builds A, B, C… (each with its lua/ next to its dist/), each / A per variant
 *   ... --n 50000 --batch 50 --slice 1000 --keys 0,1,100,10000   (the defaults)
 *   ... --n 1000000 --drain 20000       # claim 20,000 of a 1,000,000-job backlog per variant
 *
 * Every variant (build × key count) gets a queue of N jobs first (batches of
 * 1,000, job i gets key i mod K; events stream trimmed). Then one connection
 * drains them all in turns of `slice` jobs, variant after variant (claim
 * `batch` jobs, complete them, again), so a change of the machine's speed (it
 * is shared) falls on every variant alike. Per job, per variant: Redis time
 * in claimJobs and completeJobs (SLOWLOG at 0 µs: every EVALSHA with its
 * duration), Redis CPU (INFO cpu, user + sys: not counting the time Redis
 * waited for a core), and the commands the scripts ran (INFO commandstats:
 * calls and µs; a command's µs there excludes what redis.call adds around
 * it). Then the cost of a redis.call itself: 10,000 ZSCOREs in one script.
 */
const path = require('node:path');
const os = require('node:os');
const { mkdtempSync, rmSync } = require('node:fs');
const IORedis = require('ioredis');
const { RedisNode } = require('../lib/private-redis');
const { freePort } = require('../lib/server');
const systems = require('./systems');
const { median, fmt } = systems;

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const N = Number(opt('n', 50000));
const BATCH = Number(opt('batch', 50));
const SLICE = Number(opt('slice', 1000));
/** Jobs claimed per variant (default all N): a large backlog measured without draining it all. */
const DRAIN = Number(opt('drain', N));
const KEYS = opt('keys', '0,1,100,10000').split(',').map(Number);
const DISTS = (opt('dist', '') || '').split(',').filter(Boolean).map((d) => path.resolve(d));
const BUILDS = DISTS.length ? DISTS : [undefined];
const label = (b) => (DISTS.length ? String.fromCharCode(65 + BUILDS.indexOf(b)) : '');

const { commandstats } = systems;

/** Redis CPU used so far (user + sys), µs. */
async function redisCpu(redis) {
  const info = await redis.info('cpu');
  const v = (k) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)[1]);
  return (v('used_cpu_user') + v('used_cpu_sys')) * 1e6;
}

/** µs of the EVALSHAs in the SLOWLOG by number of keys (claimJobs 8, completeJobs 5); clears it. */
async function scriptTimes(redis) {
  const out = { 8: 0, 5: 0 };
  for (const [, , us, argv] of await redis.slowlog('GET', -1)) {
    if (String(argv[0]).toLowerCase() === 'evalsha') out[String(argv[2])] = (out[String(argv[2])] ?? 0) + Number(us);
  }
  await redis.slowlog('RESET');
  return out;
}

async function prepare(K, dist) {
  const q = systems.sluice({ concurrency: 1, inflight: 1, tag: 'kclaim', dist });
  await q.addBatch(N, 1000, undefined, K ? (i) => `k${i % K}` : undefined);
  await q.redis.xtrim(q.keys('bench').events, 'MAXLEN', 0);
  return { K, dist, q, done: 0, claim: 0, complete: 0, cpu: 0, cmds: {}, claims: 0 };
}

/** Claims and completes up to SLICE jobs of variant v, adding its Redis time, CPU and commands to v. */
async function slice(v, admin) {
  await admin.slowlog('RESET');
  const stats0 = await commandstats(admin);
  const cpu0 = await redisCpu(admin);
  let n = 0;
  while (n < Math.min(SLICE, DRAIN - v.done)) {
    const res = await v.q.store.claimForWorker('bench', BATCH, 30000, 'w', true);
    v.claims++;
    if (!res.jobs.length) break;
    await v.q.store.complete('bench', 'w', res.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
    n += res.jobs.length;
  }
  v.cpu += (await redisCpu(admin)) - cpu0;
  const stats1 = await commandstats(admin);
  const t = await scriptTimes(admin);
  v.claim += t[8];
  v.complete += t[5];
  for (const [c, a] of Object.entries(stats1)) {
    if (['evalsha', 'slowlog', 'info'].includes(c)) continue;
    const b = stats0[c] ?? { calls: 0, usec: 0 };
    const d = (v.cmds[c] ??= { calls: 0, us: 0 });
    d.calls += a.calls - b.calls;
    d.us += a.usec - b.usec;
  }
  v.done += n;
  return n;
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-kclaim-'));
  const node = new RedisNode({ name: 'kclaim', port: await freePort(), dir, extra: ['appendonly no', 'slowlog-log-slower-than 0', 'slowlog-max-len 100000'] });
  const stop = async () => {
    await node.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => stop().then(() => process.exit(130)));
  await node.start();
  process.env.REDIS_URL = `redis://127.0.0.1:${node.port}`;
  const admin = new IORedis(process.env.REDIS_URL);
  try {
    console.log(`private Redis on port ${node.port}; N=${fmt(N)} per variant (${fmt(DRAIN)} claimed), claims of ${BATCH}, turns of ${fmt(SLICE)} jobs`);
    DISTS.forEach((d, i) => console.log(`build ${String.fromCharCode(65 + i)}: ${d}`));
    const variants = [];
    for (const K of KEYS) for (const b of BUILDS) variants.push(await prepare(K, b));
    console.log(`Redis used_memory with every variant's backlog: ${fmt(Number(/used_memory:(\d+)/.exec(await admin.info('memory'))[1]) / 2 ** 20)} MiB`);
    let left = variants.slice();
    for (let turn = 0; left.length; turn++) {
      // Alternate the order of the turns, so no variant always follows the same one.
      for (const v of turn % 2 ? [...left].reverse() : left) await slice(v, admin);
      left = left.filter((v) => v.done < DRAIN);
    }
    for (const v of variants) if (v.done < DRAIN) throw new Error(`claimed ${v.done} of ${DRAIN}`);
    const name = (v) => `${label(v.dist)}${label(v.dist) ? ' ' : ''}${v.K} keys`;
    const sum = (v) => Object.values(v.cmds).reduce((s, c) => s + c.us, 0) / DRAIN;
    const base = (v) => variants.find((x) => x.K === KEYS[0] && x.dist === v.dist);
    console.log('\nper job, µs: claimJobs, completeJobs, both (SLOWLOG); Redis CPU; of which inside commands (commandstats); both / first key count');
    for (const v of variants) {
      const both = (v.claim + v.complete) / DRAIN;
      console.log(`  ${name(v).padEnd(14)} ${(v.claim / DRAIN).toFixed(2).padStart(7)} ${(v.complete / DRAIN).toFixed(2).padStart(7)} ${both.toFixed(2).padStart(7)}   cpu ${(v.cpu / DRAIN).toFixed(2).padStart(7)}   in commands ${sum(v).toFixed(2).padStart(6)}   ${(both / ((base(v).claim + base(v).complete) / DRAIN)).toFixed(2)}x`);
    }
    console.log('\ncommands run by the scripts, per job: calls / µs');
    const names = [...new Set(variants.flatMap((v) => Object.keys(v.cmds)))].filter((c) => variants.some((v) => v.cmds[c]?.calls / DRAIN >= 0.005)).sort();
    console.log('command'.padEnd(15) + variants.map((v) => name(v).padStart(16)).join(''));
    for (const c of names) console.log(c.padEnd(15) + variants.map((v) => `${((v.cmds[c]?.calls ?? 0) / DRAIN).toFixed(2)} / ${((v.cmds[c]?.us ?? 0) / DRAIN).toFixed(2)}`.padStart(16)).join(''));
    console.log('calls'.padEnd(15) + variants.map((v) => (Object.values(v.cmds).reduce((s, c) => s + c.calls, 0) / DRAIN).toFixed(2).padStart(16)).join(''));
    for (const d of DISTS.slice(1)) {
      console.log(`\n${label(d)} / A per key count: claimJobs, completeJobs, both, Redis CPU`);
      for (const K of KEYS) {
        const [a, b] = [DISTS[0], d].map((x) => variants.find((v) => v.K === K && v.dist === x));
        console.log(`  ${String(K).padEnd(6)} ${(b.claim / a.claim).toFixed(2)}  ${(b.complete / a.complete).toFixed(2)}  ${((b.claim + b.complete) / (a.claim + a.complete)).toFixed(2)}  ${(b.cpu / a.cpu).toFixed(2)}`);
      }
    }
    // A build instrumented per call site (a local measurement copy of lua/)
    // accumulates µs and counts in the hash <queue base>prof: print them per job.
    for (const v of variants) {
      const prof = await v.q.redis.hgetall(v.q.keys('bench').base + 'prof');
      const sites = Object.keys(prof).filter((k) => !k.endsWith('#')).sort((x, y) => x.localeCompare(y, 'en', { numeric: true }));
      if (!sites.length) continue;
      console.log(`\n${name(v)}: per call site, calls per job / µs per job (each interval includes one TIME call: see (TIME pair))`);
      for (const k of sites) console.log(`  ${k.padEnd(70)} ${(Number(prof[k + '#']) / DRAIN).toFixed(3).padStart(7)} / ${(Number(prof[k]) / DRAIN).toFixed(2).padStart(6)}`);
    }
    for (const v of variants) {
      await v.q.clean();
      v.q.close();
    }
    // What a redis.call costs beyond the command: 10,000 ZSCOREs in one script.
    const runs = [];
    await admin.zadd('kclaim:z', 1, 'a');
    for (let i = 0; i < 5; i++) {
      await admin.slowlog('RESET');
      const before = await commandstats(admin);
      await admin.eval("for i = 1, 10000 do redis.call('ZSCORE', KEYS[1], 'a') end return 1", 1, 'kclaim:z');
      const after = await commandstats(admin);
      const [[, , us]] = (await admin.slowlog('GET', -1)).filter((e) => String(e[3][0]).toLowerCase() === 'eval');
      runs.push({ total: us / 10000, cmd: (after.zscore.usec - (before.zscore?.usec ?? 0)) / 10000 });
    }
    const t = median(runs.map((r) => r.total));
    const c = median(runs.map((r) => r.cmd));
    console.log(`\nredis.call (median of 5 scripts of 10,000 ZSCOREs): ${t.toFixed(2)} µs per call, of which ${c.toFixed(2)} µs in ZSCORE itself, ${(t - c).toFixed(2)} µs around it`);
  } finally {
    admin.disconnect();
    await stop();
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
