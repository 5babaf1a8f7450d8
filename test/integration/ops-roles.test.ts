import { Client } from 'pg';
import { normalizeEnqueue } from '../../src/core/job-options';
import { createRedis, RedisClient } from '../../src/redis/connection';
import { createRedisStores, type RedisStores } from '../../src/redis/stores';
import { RedisScripts } from '../../src/redis/scripts';
import { privatePostgres, PrivatePostgres } from '../support/private-postgres';
import { killAll, SluiceProcess, startSluice } from '../support/process';
import { testPrefix } from '../support/redis';
import { makeTmpDir, RedisServer, removeDir, startRedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitUntil } from '../support/timing';

/**
 * API.md "Ops" (v1.1): every process listens and serves /healthz, /readyz and
 * /metrics whatever its ROLE; without `api` it serves only these (404 in the
 * error envelope for the rest). Readiness follows the services its roles
 * need: a worker needs Redis only, scheduler and audit also PostgreSQL.
 * Spawned `node dist/main.js` processes on a private redis-server and a
 * private PostgreSQL, both stopped and started again by the test.
 */
jest.setTimeout(180_000);

const DB = 'sluice_ops_roles';
let redisDir: string;
let redisServer: RedisServer;
let pg: PrivatePostgres;
let redis: RedisClient;
let store: RedisStores;
const prefix = testPrefix('ops-roles');
let worker: SluiceProcess;
let scheduler: SluiceProcess;
let audit: SluiceProcess;

interface Answer {
  status: number;
  requestId: string | null;
  text: string;
  json: () => Record<string, unknown> & { error?: { code: string; message: string; details: { path: string }[]; requestId: string } };
}

async function get(p: SluiceProcess, path: string): Promise<Answer> {
  const r = await fetch(p.url() + path, { signal: AbortSignal.timeout(15_000) }).catch((e: Error) => {
    // A refused connection means the process is gone: say how it ended and what it printed last.
    const ended = p.proc.exitCode !== null || p.proc.signalCode !== null;
    throw ended ? new Error(`${path}: process exited (${p.proc.exitCode ?? p.proc.signalCode}): ${p.output().slice(-3000)}`) : e;
  });
  const text = await r.text();
  return { status: r.status, requestId: r.headers.get('x-request-id'), text, json: () => JSON.parse(text) };
}

/** Polls GET /readyz until its status is `status`; returns the answer. */
async function readyzBecomes(p: SluiceProcess, status: number, what: string): Promise<Answer> {
  return waitUntil(`${what}: /readyz ${status}`, async () => {
    const a = await get(p, '/readyz');
    return a.status === status ? a : undefined;
  }, 60_000, 200);
}

beforeAll(async () => {
  redisDir = makeTmpDir('ops-roles');
  redisServer = await startRedisServer({ dir: redisDir });
  pg = await privatePostgres('ops-roles');
  await pg.start();
  redis = createRedis({ redisUrl: redisServer.url, redisClusterNodes: null });
  redis.on('error', () => undefined); // the outage is expected
  const scripts = new RedisScripts(redis);
  await scripts.verify();
  store = createRedisStores(redis, prefix, undefined, scripts);
  const env = { REDIS_URL: redisServer.url, REDIS_PREFIX: prefix, DATABASE_URL: pg.url(DB), LOG_LEVEL: 'info' };
  // The audit role creates and migrates the database first; the scheduler then finds it ready.
  audit = await startSluice({ ...env, ROLE: 'audit' });
  [scheduler, worker] = await Promise.all([
    startSluice({ ...env, ROLE: 'scheduler', REAPER_INTERVAL_MS: '300' }),
    startSluice({ ...env, ROLE: 'worker', QUEUES: 'opsq' }),
  ]);
}, 180_000);

afterAll(async () => {
  await killAll([worker, scheduler, audit]);
  redis?.disconnect();
  await stopAllRedisServers();
  removeDir(redisDir);
  await pg?.destroy();
});

describe('every role serves the ops endpoints', () => {
  it('each process logs the URL it listens on and answers /healthz and /readyz', async () => {
    for (const p of [worker, scheduler, audit]) {
      expect(p.output()).toMatch(/"msg":"sluice listening on http:\/\/127\.0\.0\.1:\d+"/);
      const h = await get(p, '/healthz');
      expect([h.status, h.json()]).toEqual([200, { status: 'ok' }]);
      expect((await get(p, '/readyz')).status).toBe(200);
    }
    // A worker has no PostgreSQL connection: it reports Redis alone.
    expect((await get(worker, '/readyz')).json()).toEqual({ status: 'ok', checks: { redis: 'ok' } });
    for (const p of [scheduler, audit]) expect((await get(p, '/readyz')).json()).toEqual({ status: 'ok', checks: { redis: 'ok', postgres: 'ok', migrations: 'ok' } });
  });

  it('API routes and /docs are 404 in the error envelope, with X-Request-Id', async () => {
    for (const p of [worker, scheduler, audit]) {
      for (const path of ['/jobs/0190a8a0-0000-7000-8000-000000000000', '/queues', '/docs']) {
        const a = await get(p, path);
        expect(a.status).toBe(404);
        expect(a.requestId).toBeTruthy();
        expect(a.json().error).toMatchObject({ code: 'not_found', requestId: a.requestId });
      }
    }
  });

  it('worker /metrics: jobs by queue and type, queue depths, oldest waiting age', async () => {
    const [done] = await store.jobs.enqueue([normalizeEnqueue({ queue: 'opsq', type: 'diag.echo', payload: { n: 1 } }, 1_000_000)]);
    // A queue this worker does not serve: its job waits.
    await store.jobs.enqueue([normalizeEnqueue({ queue: 'opsidle', type: 'diag.echo', priority: -5 }, 1_000_000)]);
    await store.jobs.enqueue([normalizeEnqueue({ queue: 'opsidle', type: 'diag.echo', priority: 50 }, 1_000_000)]);
    const text = await waitUntil('completion counted', async () => {
      const t = (await get(worker, '/metrics')).text;
      return t.includes('sluice_jobs_completed_total{project="default",queue="opsq",type="diag.echo"} 1') ? t : undefined;
    }, 30_000, 100);
    expect(done.id).toBeTruthy();
    expect(text).toContain('sluice_jobs_started_total{project="default",queue="opsq",type="diag.echo"} 1');
    expect(text).toContain('sluice_job_processing_seconds_count{project="default",queue="opsq",type="diag.echo",outcome="completed"} 1');
    expect(text).toContain('sluice_job_wait_seconds_count{project="default",queue="opsq",type="diag.echo"} 1');
    expect(text).toContain('sluice_queue_jobs{project="default",queue="opsidle",state="waiting"} 2');
    expect(text).toContain('sluice_queue_depth_scrape_success 1');
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    // The other roles' series are not there.
    expect(text).not.toContain('sluice_cron_slots_fired_total');
    expect(text).not.toContain('sluice_audit_lag_seconds');
    // The idle queue's oldest job (the low-priority one, enqueued first) ages.
    await waitUntil('oldest waiting age ≥ 1 s', async () => {
      const m = /^sluice_queue_oldest_waiting_age_seconds\{project="default",queue="opsidle"\} (\S+)$/m.exec((await get(worker, '/metrics')).text);
      return m !== null && Number(m[1]) >= 1;
    }, 15_000, 200);
  });

  it('scheduler /metrics: cron slots fired and leases reaped', async () => {
    // A lease that expires at once: the scheduler's reaper takes the job back.
    await store.jobs.enqueue([normalizeEnqueue({ queue: 'opsreap', type: 'diag.echo' }, 1_000_000)]);
    expect((await store.jobs.claim('opsreap', 1, 100, 'gone-worker')).jobs).toHaveLength(1);
    // An every-second schedule, written as the API would.
    const c = new Client({ connectionString: pg.url(DB) });
    await c.connect();
    try {
      await c.query(
        `INSERT INTO schedules (id, name, cron, timezone, queue, type, payload, priority, enabled, next_run_at, revision, created_at, updated_at)
         VALUES (gen_random_uuid(), 'ops-every-second', '* * * * * *', 'UTC', 'opscron', 'diag.echo', '{}', 0, true, now(), 1, now(), now())`,
      );
    } finally {
      await c.end();
    }
    const text = await waitUntil('slot fired and lease reaped', async () => {
      const t = (await get(scheduler, '/metrics')).text;
      return /^sluice_cron_slots_fired_total\{project="default",queue="opscron"\} [1-9]/m.test(t) && t.includes('sluice_leases_reaped_total{project="default",queue="opsreap"} 1') ? t : undefined;
    }, 30_000, 200);
    expect(text).not.toContain('sluice_jobs_started_total{');
    expect(text).not.toContain('sluice_queue_jobs{');
  });

  it('audit /metrics: lag, backlog, batches and quarantined entries', async () => {
    const text = (await get(audit, '/metrics')).text;
    expect(text).toMatch(/^sluice_audit_lag_seconds \d/m);
    expect(text).toMatch(/^sluice_audit_quarantined_entries_total \d/m);
    expect(text).toContain('sluice_audit_batch_entries_bucket');
    expect(text).toMatch(/^sluice_audit_backlog_events \d/m);
    expect(text).toContain('sluice_audit_backlog_max 1000000');
    expect(text).not.toContain('sluice_jobs_started_total{');
    expect(text).not.toContain('sluice_cron_slots_fired_total');
  });
});

describe('readiness follows the services each role needs', () => {
  it('PostgreSQL down: worker stays ready; scheduler and audit 503 naming postgres, quickly; back once it returns', async () => {
    await pg.stop('immediate');
    for (const p of [scheduler, audit]) {
      const t0 = Date.now();
      const a = await get(p, '/readyz');
      expect(Date.now() - t0).toBeLessThan(10_000); // bounded by the probe's 1.5 s timeout, with slack for a busy machine
      expect(a.status).toBe(503);
      expect(a.json().error).toMatchObject({ code: 'unavailable', requestId: a.requestId });
      expect(a.json().error!.details.map((d) => d.path)).toEqual(['postgres']);
      expect((await get(p, '/healthz')).status).toBe(200);
    }
    expect((await get(worker, '/readyz')).status).toBe(200);
    await pg.start();
    for (const p of [scheduler, audit]) expect((await readyzBecomes(p, 200, 'PostgreSQL back')).json().status).toBe('ok');
  });

  it('Redis down: every role 503 naming redis; back once it returns', async () => {
    await redisServer.stop('SIGKILL');
    for (const p of [worker, scheduler, audit]) {
      const a = await readyzBecomes(p, 503, 'Redis down');
      expect(a.json().error!.details.map((d) => d.path)).toEqual(['redis']);
      expect((await get(p, '/healthz')).status).toBe(200);
    }
    await redisServer.start();
    for (const p of [worker, scheduler, audit]) expect((await readyzBecomes(p, 200, 'Redis back')).json().status).toBe('ok');
  });
});
