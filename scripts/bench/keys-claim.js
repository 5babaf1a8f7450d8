#!/usr/bin/env node
/*
 * Where the Redis time of flow control per key goes: the claim and complete
 * scripts timed inside Redis, per job, with no key and with 1 / 100 / 10,000
 * concurrency keys. A private redis-server (no persistence, a port of its own)
 * so SLOWLOG and INFO commandstats see nothing but this; it is stopped at the end.
 *
 *   npm run build && node scripts/bench/keys-claim.js
 *   DIST=/tmp/other/dist node scripts/bench/keys-claim.js   # another build (its lua/ next to its dist/)
 *   ... --n 50000 --batch 50 --rounds 3 --keys 0,1,100,10000   (the defaults)
 *
 * Per variant: N jobs enqueued (batches of 1,000, job i gets key i mod K),
 * the events stream trimmed, then one connection claims `batch` jobs and
 * completes them, again and again until none is left (no worker runtime, no
 * other client: the scripts' own cost). Prints per job: µs of Redis time in
 * claimJobs and in completeJobs (SLOWLOG at 0 µs: every EVALSHA with its
 * duration), the wall time of the loop, and the commands the scripts ran
 * (INFO commandstats: calls and µs per job; a command's µs there excludes
 * what redis.call adds around it, which is the scripts' total minus the sum).
 * Then the cost of a redis.call itself: a script of 10,000 ZSCOREs, timed.
 */
const path = require('node:path');
const os = require('node:os');
const { performance } = require('node:perf_hooks');
const { mkdtempSync, rmSync } = require('node:fs');
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
const ROUNDS = Number(opt('rounds', 3));
const KEYS = opt('keys', '0,1,100,10000').split(',').map(Number);

async function commandstats(redis) {
  const out = {};
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) out[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  }
  return out;
}

/** SLOWLOG entries (all: the threshold is 0) as {numkeys: total µs, count}; clears it. */
async function scriptTimes(redis) {
  const out = {};
  for (const [, , us, argv] of await redis.slowlog('GET', -1)) {
    if (String(argv[0]).toLowerCase() !== 'evalsha') continue;
    const k = String(argv[2]);
    out[k] = out[k] ?? { us: 0, count: 0 };
    out[k].us += Number(us);
    out[k].count++;
  }
  await redis.slowlog('RESET');
  return out;
}

async function variant(K) {
  const q = systems.sluice({ concurrency: 1, inflight: 1, tag: 'kclaim' });
  const k = q.keys('bench');
  await q.addBatch(N, 1000, undefined, K ? (i) => `k${i % K}` : undefined);
  await q.redis.xtrim(k.events, 'MAXLEN', 0);
  await q.redis.slowlog('RESET');
  const before = await commandstats(q.redis);
  const t0 = performance.now();
  let done = 0;
  for (;;) {
    const res = await q.store.claimForWorker('bench', BATCH, 30000, 'w', true);
    if (!res.jobs.length) break;
    await q.store.complete('bench', 'w', res.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
    done += res.jobs.length;
  }
  const wall = (performance.now() - t0) / done;
  const after = await commandstats(q.redis);
  const times = await scriptTimes(q.redis);
  if (done !== N) throw new Error(`claimed ${done} of ${N}`);
  const cmds = {};
  for (const [c, a] of Object.entries(after)) {
    const b = before[c] ?? { calls: 0, usec: 0 };
    if (a.calls > b.calls && !['evalsha', 'slowlog', 'info', 'config'].includes(c)) cmds[c] = { calls: (a.calls - b.calls) / N, us: (a.usec - b.usec) / N };
  }
  await q.clean();
  q.close();
  // claimJobs has 8 KEYS, completeJobs 5.
  return { claim: times['8'].us / N, complete: times['5'].us / N, claimCalls: times['8'].count, wall, cmds };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-kclaim-'));
  const node = new RedisNode({ name: 'kclaim', port: await freePort(), dir, extra: ['appendonly no', 'slowlog-log-slower-than 0', 'slowlog-max-len 1000000'] });
  await node.start();
  process.env.REDIS_URL = `redis://127.0.0.1:${node.port}`;
  try {
    console.log(`private Redis on port ${node.port}; N=${fmt(N)}, claims of ${BATCH}, ${ROUNDS} rounds; µs per job (Redis time), medians`);
    const res = Object.fromEntries(KEYS.map((K) => [K, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const K of r % 2 ? [...KEYS].reverse() : KEYS) {
        const v = await variant(K);
        res[K][r] = v;
        console.log(`round ${r + 1}, ${K} keys: claimJobs ${v.claim.toFixed(2)} µs/job, completeJobs ${v.complete.toFixed(2)} µs/job, wall ${(v.wall * 1000).toFixed(1)} µs/job`);
      }
    }
    const m = (K, f) => median(res[K].map(f));
    // The machine changes speed between rounds: the paired ratio (same round) is the steadier figure.
    const ratio = (K, f) => median(res[K].map((x, r) => f(x) / f(res[KEYS[0]][r])));
    const both = (x) => x.claim + x.complete;
    console.log(`\nkeys      claimJobs  completeJobs  both    wall/job  both / ${KEYS[0]} keys (median of per-round ratios)`);
    for (const K of KEYS) {
      console.log(`${String(K).padEnd(9)} ${m(K, (x) => x.claim).toFixed(2).padStart(9)}  ${m(K, (x) => x.complete).toFixed(2).padStart(12)}  ${m(K, both).toFixed(2).padStart(6)}  ${m(K, (x) => x.wall * 1000).toFixed(1).padStart(7)}   ${ratio(K, both).toFixed(2)}x`);
    }
    console.log('\ncommands run by the scripts, per job: calls / µs (median round)');
    const names = [...new Set(KEYS.flatMap((K) => res[K].flatMap((x) => Object.keys(x.cmds))))].sort();
    console.log('command'.padEnd(15) + KEYS.map((K) => `${K} keys`.padStart(16)).join(''));
    for (const c of names) {
      console.log(c.padEnd(15) + KEYS.map((K) => `${m(K, (x) => x.cmds[c]?.calls ?? 0).toFixed(2)} / ${m(K, (x) => x.cmds[c]?.us ?? 0).toFixed(2)}`.padStart(16)).join(''));
    }
    console.log('sum'.padEnd(15) + KEYS.map((K) => m(K, (x) => Object.values(x.cmds).reduce((s, v) => s + v.us, 0)).toFixed(2).padStart(16)).join(''));
    // What a redis.call costs beyond the command: 10,000 ZSCOREs in one script.
    const r = new (require('ioredis'))(process.env.REDIS_URL);
    await r.zadd('kclaim:z', 1, 'a');
    await r.slowlog('RESET');
    const before = await commandstats(r);
    await r.eval("for i = 1, 10000 do redis.call('ZSCORE', KEYS[1], 'a') end return 1", 1, 'kclaim:z');
    const after = await commandstats(r);
    const [[, , us]] = (await r.slowlog('GET', -1)).filter((e) => String(e[3][0]).toLowerCase() === 'eval');
    const inCmd = after.zscore.usec - (before.zscore?.usec ?? 0);
    console.log(`\nredis.call: a script of 10,000 ZSCOREs took ${us} µs, the ZSCOREs themselves ${inCmd} µs: ${((us - inCmd) / 10000).toFixed(2)} µs per call around the command`);
    r.disconnect();
  } finally {
    await node.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
