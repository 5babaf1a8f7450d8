/**
 * C26 (CASES.md): completions during a Redis stall are never lost and never
 * acknowledged falsely.
 *
 * One Sluice process (ROLE=api,worker,scheduler; HTTP_ANSWER_TIMEOUT_MS 1.5 s)
 * on a private redis-server (AOF, appendfsync always). Lease 8 s: 10
 * `diag.sleep {ms:1500}` run in the process's worker and an external worker
 * holds 5 jobs of an external queue (claimed over HTTP). Redis is frozen
 * (`kill -STOP`) for 4 s from 0.5 s, then resumed. Meanwhile, each client
 * giving up on a request after 2.5 s (less than the stall), a producer posts
 * a job every 250 ms (each with its own idempotency key, sent again with the
 * same key until it gets a 2xx), the external worker heartbeats every 500 ms
 * and, at 1 s, completes its 5 jobs, sending each complete again with the
 * same lock token every second until it gets an answer other than 503 or a
 * timeout. Every request and its answer are recorded with their times.
 *
 * Checked: every job ends `completed` once (the events stream), claimed once
 * (`attempts` 1, GET /jobs/:id); every 2xx landed — a job answered 201 is in
 * the stream, and a 2xx answered while Redis was frozen or down carries a
 * Redis time from before the fault (Redis ran it before it stopped): no
 * request is answered 2xx for a write Redis had not run; a producer's key
 * makes one job whatever the number of tries; the external worker's first
 * complete is not answered 2xx during the stall and its complete sent again
 * with the same token is accepted (200, `completed`) after it; nothing is
 * `active` 10 s after the stall.
 *
 * Variant A: the same with Redis killed (SIGKILL) at 0.5 s and restarted from
 * its AOF at 4.5 s instead of frozen.
 * Variant B: lease 2 s, shorter than the stall. Re-delivery is allowed (a
 * re-run only after a `stalled` event), each job still completes exactly
 * once, and the external worker that stayed silent through the stall has its
 * stale complete refused with 409 `lease_lost` (the job unchanged) once the
 * reaper has taken its jobs; a second external worker then completes them.
 */
import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { createRedis } from '../../../src/redis/connection';
import { queueKeys } from '../../../src/redis/keys';
import { openTestDb, type TestDb } from '../../support/postgres';
import { killAll, type SluiceProcess, startSluice } from '../../support/process';
import { auditTrails, checkRunsOnce, makeTmpDir, type RedisServer, removeDir, sleepMs, startRedisServer, stopAllRedisServers, waitUntil } from '../../support/redis-server';

jest.setTimeout(150_000);

const Q = 'c26';
const QX = 'c26x';
const SLEEP_MS = 1500;
const FAULT_AT_MS = 500;
const FAULT_MS = 4000;
const ANSWER_TIMEOUT_MS = 1500;
/** The clients' own timeout per request, shorter than the stall (as a client's would be). */
const CLIENT_TIMEOUT_MS = 2500;

let dir: string;
let server: RedisServer;
let db: TestDb;
let redis: Redis;
const procs: SluiceProcess[] = [];

beforeAll(async () => {
  dir = makeTmpDir('c26');
  [server, db] = await Promise.all([startRedisServer({ dir, appendonly: true, appendfsync: 'always' }), openTestDb('c26')]);
  redis = createRedis({ redisUrl: server.url, redisClusterNodes: null }) as Redis;
});

afterAll(async () => {
  server?.proc?.kill('SIGCONT');
  await killAll(procs);
  redis?.disconnect();
  await stopAllRedisServers();
  removeDir(dir);
  await db?.close();
});

/** One HTTP exchange as the clients saw it; status 0 = no answer (timeout, connection error). */
interface Exchange {
  what: 'setup' | 'enqueue' | 'heartbeat' | 'complete' | 'claim' | 'read';
  key: string;
  sentAt: number;
  answeredAt: number;
  status: number;
  body: any;
}

interface Variant {
  name: string;
  fault: 'freeze' | 'restart';
  leaseMs: number;
  heartbeatMs: number;
  /** The external worker stays silent through the stall, then sends its stale complete (variant B). */
  staleExternal: boolean;
}

async function runVariant(v: Variant): Promise<void> {
  const prefix = `t-c26-${v.name}-${randomBytes(3).toString('hex')}`;
  const proc = await startSluice({
    ROLE: 'api,worker,scheduler',
    REDIS_URL: server.url,
    REDIS_PREFIX: prefix,
    DATABASE_URL: db.url,
    QUEUES: Q,
    WORKER_CONCURRENCY: '10',
    LOCK_TTL_MS: String(v.leaseMs),
    HEARTBEAT_INTERVAL_MS: String(v.heartbeatMs),
    REAPER_INTERVAL_MS: '500',
    SHUTDOWN_GRACE_MS: '1000',
    HTTP_ANSWER_TIMEOUT_MS: String(ANSWER_TIMEOUT_MS),
  });
  procs.push(proc);
  const base = proc.url();
  const log: Exchange[] = [];
  const call = async (what: Exchange['what'], key: string, method: string, path: string, body?: unknown): Promise<Exchange> => {
    const sentAt = Date.now();
    let status = 0;
    let resBody: any = null;
    try {
      const res = await fetch(base + path, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      });
      status = res.status;
      resBody = await res.json().catch(() => null);
    } catch {
      /* no answer */
    }
    const x: Exchange = { what, key, sentAt, answeredAt: Date.now(), status, body: resBody };
    log.push(x);
    return x;
  };
  const ok = (x: Exchange) => x.status >= 200 && x.status < 300;
  const kq = queueKeys(prefix, Q);
  const kx = queueKeys(prefix, QX);

  // ---- setup: 10 in-process jobs running, 5 external jobs held ------------
  expect((await call('setup', QX, 'PUT', `/queues/${QX}`, { external: true })).status).toBe(200);
  const ext = await call('setup', QX, 'POST', '/jobs/batch', { jobs: Array.from({ length: 5 }, (_, i) => ({ type: 'ext.work', queue: QX, payload: { i } })) });
  expect(ext.status).toBe(201);
  const inproc = await call('setup', Q, 'POST', '/jobs/batch', { jobs: Array.from({ length: 10 }, (_, i) => ({ type: 'diag.sleep', queue: Q, payload: { ms: SLEEP_MS, i } })) });
  expect(inproc.status).toBe(201);
  const inprocIds: string[] = inproc.body.jobs.map((j: { id: string }) => j.id);
  const claim = await call('claim', 'ext-1', 'POST', `/queues/${QX}/claim`, { workerId: 'ext-1', max: 5 });
  expect(claim.status).toBe(200);
  const held: { id: string; lockToken: string }[] = claim.body.jobs;
  expect(held).toHaveLength(5);
  await waitUntil('the 10 in-process jobs running', async () => (await redis.zcard(kq.active)) === 10, 10_000, 20);
  const t0 = Date.now();
  const window = t0 + FAULT_AT_MS + FAULT_MS + 1500;

  // ---- traffic through the stall -----------------------------------------
  /** POST /jobs with one idempotency key until a 2xx (every try recorded). */
  const produce = async (n: number) => {
    const key = `p-${n}`;
    for (let tries = 0; tries < 40; tries++) {
      const x = await call('enqueue', key, 'POST', '/jobs', { type: 'diag.sleep', queue: Q, payload: { ms: 10, n }, idempotencyKey: key });
      if (ok(x)) return;
      expect([0, 503]).toContain(x.status);
      await sleepMs(500);
    }
  };
  const producer = (async () => {
    const sent: Promise<void>[] = [];
    for (let n = 0; Date.now() < window; n++) {
      sent.push(produce(n));
      await sleepMs(250);
    }
    await Promise.all(sent);
  })();

  const completed = new Set<string>();
  const heartbeats = v.staleExternal
    ? Promise.resolve()
    : (async () => {
        while (Date.now() < window && completed.size < held.length) {
          for (const h of held) if (!completed.has(h.id)) void call('heartbeat', h.id, 'POST', `/jobs/${h.id}/heartbeat`, { lockToken: h.lockToken });
          await sleepMs(500);
        }
      })();
  /** The external worker completes each job at 1 s, sending it again with the same token while the answer is 503 or none. */
  const completes = v.staleExternal
    ? Promise.resolve()
    : (async () => {
        await sleepMs(t0 + 1000 - Date.now());
        await Promise.all(
          held.map(async (h) => {
            for (let tries = 0; tries < 30; tries++) {
              const x = await call('complete', h.id, 'POST', `/jobs/${h.id}/complete`, { lockToken: h.lockToken, result: { by: 'ext-1' } });
              if (x.status !== 0 && x.status !== 503) {
                completed.add(h.id);
                return;
              }
              await sleepMs(1000);
            }
          }),
        );
      })();

  // ---- the fault ------------------------------------------------------------
  await sleepMs(t0 + FAULT_AT_MS - Date.now());
  const faultAt = Date.now();
  if (v.fault === 'freeze') {
    server.proc!.kill('SIGSTOP');
    await sleepMs(FAULT_MS);
    server.proc!.kill('SIGCONT');
  } else {
    await server.kill(); // SIGKILL: no shutdown; with appendfsync always every answered write is on disk
    await sleepMs(faultAt + FAULT_MS - Date.now());
    await server.start();
  }
  const backAt = Date.now();
  await Promise.all([producer, heartbeats, completes]);

  // ---- variant B: the silent worker's stale complete, then a new holder ---
  if (v.staleExternal) {
    await waitUntil(
      'the reaper takes the silent worker’s jobs',
      async () => {
        const t = await auditTrails(redis, kx.events);
        return held.every((h) => t.get(h.id)?.count.stalled === 1);
      },
      10_000,
      100,
    );
    for (const h of held) {
      const before = await redis.hgetall(`${kx.base}job:${h.id}`);
      const stale = await call('complete', h.id, 'POST', `/jobs/${h.id}/complete`, { lockToken: h.lockToken, result: { by: 'stale' } });
      expect(stale.status).toBe(409);
      expect(stale.body.error.code).toBe('lease_lost');
      expect(await redis.hgetall(`${kx.base}job:${h.id}`)).toEqual(before);
    }
    const again: { id: string; lockToken: string }[] = [];
    while (again.length < held.length) {
      const c = await call('claim', 'ext-2', 'POST', `/queues/${QX}/claim`, { workerId: 'ext-2', max: 5, waitMs: 2000 });
      expect(c.status).toBe(200);
      again.push(...c.body.jobs);
    }
    expect(again.map((j) => j.id).sort()).toEqual(held.map((h) => h.id).sort());
    for (const j of again) {
      expect(j.lockToken).not.toBe(held.find((h) => h.id === j.id)!.lockToken);
      expect((await call('complete', j.id, 'POST', `/jobs/${j.id}/complete`, { lockToken: j.lockToken, result: { by: 'ext-2' } })).status).toBe(200);
    }
  }

  // ---- every job completed once, nothing active --------------------------
  const keys = new Map<string, Set<string>>();
  for (const x of log) {
    if (x.what === 'enqueue' && x.key.startsWith('p-') && ok(x)) {
      let s = keys.get(x.key);
      if (!s) keys.set(x.key, (s = new Set()));
      s.add(x.body.id);
    }
  }
  const produced = [...keys.values()].flatMap((s) => [...s]);
  const extIds = held.map((h) => h.id);
  const all = [...inprocIds, ...produced, ...extIds];
  const settleBy = v.staleExternal ? backAt + 40_000 : backAt + 10_000;
  const trailsOf = async () => new Map([...(await auditTrails(redis, kq.events)), ...(await auditTrails(redis, kx.events))]);
  await waitUntil(
    'every job completed',
    async () => {
      const t = await trailsOf();
      return all.every((id) => t.get(id)?.count.completed);
    },
    Math.max(0, settleBy - Date.now()),
    100,
  ).catch((e: Error) => {
    throw new Error(`${e.message}\nprocess output (tail):\n${proc.output().slice(-4000)}`);
  });
  const trails = await trailsOf();
  const { problems, reruns, stalled } = checkRunsOnce(all, trails);
  expect(problems.slice(0, 20)).toEqual([]);
  expect((await redis.zcard(kq.active)) + (await redis.zcard(kx.active))).toBe(0);

  // Each producer key made one job, and every key got one in the end.
  const n = Math.max(...[...log].filter((x) => x.key.startsWith('p-')).map((x) => Number(x.key.slice(2)))) + 1;
  expect(keys.size).toBe(n);
  expect([...keys].filter(([, ids]) => ids.size !== 1)).toEqual([]);

  // No 2xx for a write Redis had not run: a 2xx answered while Redis was
  // frozen or down was run before the fault (its Redis time says so).
  const redisTime = (x: Exchange): number =>
    x.what === 'enqueue' ? Date.parse(x.body.createdAt ?? x.body.jobs?.[0]?.createdAt) : x.what === 'heartbeat' ? Date.parse(x.body.leaseExpiresAt) - v.leaseMs : Date.parse(x.body.finishedAt ?? x.body.updatedAt);
  const during = log.filter((x) => ok(x) && ['enqueue', 'heartbeat', 'complete'].includes(x.what) && x.answeredAt > faultAt && x.answeredAt < backAt);
  expect(during.filter((x) => !(redisTime(x) <= faultAt + 5)).map((x) => `${x.what} ${x.key} answered ${x.answeredAt - faultAt} ms into the fault, ran at ${redisTime(x) - faultAt}`)).toEqual([]);
  // Every refusal is the error envelope's 503 `unavailable` (or no answer at all).
  const refused = log.filter((x) => !ok(x) && x.status !== 409);
  expect(refused.filter((x) => x.status !== 0 && (x.status !== 503 || x.body?.error?.code !== 'unavailable'))).toEqual([]);
  expect(refused.length).toBeGreaterThan(0); // the fault was felt

  const summary = `c26 ${v.name}: ${all.length} jobs, re-runs ${reruns}, stalled ${stalled}, ${log.length} requests (${during.length} 2xx during the fault, ${refused.filter((x) => x.status === 503).length} 503, ${refused.filter((x) => x.status === 0).length} unanswered)`;
  process.stdout.write(summary + '\n');

  if (!v.staleExternal) {
    // Claimed once each: attempts 1, on the API too.
    expect(reruns).toBe(0);
    for (const id of [...inprocIds, ...extIds]) {
      const j = await call('read', id, 'GET', `/jobs/${id}`);
      expect(j.body).toMatchObject({ status: 'completed', attempts: 1 });
    }
    // The external worker: its first complete was not answered 2xx during the
    // stall; the one sent again with the same token was accepted after it.
    for (const h of held) {
      const tries = log.filter((x) => x.what === 'complete' && x.key === h.id);
      expect(tries.length).toBeGreaterThanOrEqual(2);
      expect([0, 503]).toContain(tries[0].status);
      const last = tries[tries.length - 1];
      expect(last.status).toBe(200);
      expect(last.body).toMatchObject({ id: h.id, status: 'completed', result: { by: 'ext-1' }, attempts: 1 });
      expect(last.answeredAt).toBeGreaterThanOrEqual(backAt - 50);
    }
  }
  expect(proc.proc.exitCode).toBeNull();
  await killAll([proc]);
}

test('C26 Redis frozen for 4 s (lease 8 s): every job completed once, no false 2xx, the retried complete accepted, nothing active', async () => {
  await runVariant({ name: 'freeze', fault: 'freeze', leaseMs: 8000, heartbeatMs: 2000, staleExternal: false });
});

test('C26 variant A: Redis killed and restarted from its AOF (lease 8 s): the same', async () => {
  await runVariant({ name: 'aof', fault: 'restart', leaseMs: 8000, heartbeatMs: 2000, staleExternal: false });
});

test('C26 variant B: lease 2 s, shorter than the stall: re-delivery only after a stall, each job completed once, the stale complete refused', async () => {
  await runVariant({ name: 'lease2s', fault: 'freeze', leaseMs: 2000, heartbeatMs: 500, staleExternal: true });
});
