/**
 * API.md v1.3 "Security and recovery rules made exact" (issue 34, defects 1
 * and 5): Redis comes back empty (FLUSHALL) while Sluice runs with AUTH=on.
 * Everything Redis held that PostgreSQL knows comes back in the same rebuild,
 * and `/readyz` never says ok while a valid key would get 401:
 * - the root key and a key of every role in two projects keep working: during
 *   the rebuild they answer 503 (never 401), and from the first `/readyz` 200
 *   on, every one of them answers as before in that same round;
 * - queue settings are as they were: an external queue stays external (its
 *   job of a type no in-process handler knows is never claimed by the
 *   in-process workers), a paused queue stays paused (its job waits), limits,
 *   defaults, fairness, aging and key overrides are back;
 * twice in a row. A private redis-server (no persistence) and database; one
 * process with every role.
 */
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { openTestDb, TestDb } from '../../support/postgres';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import {
  RedisServer,
  removeDir,
  sleepMs,
  startRedisServer,
  stopAllRedisServers,
  waitUntil,
} from '../../support/redis-server';

jest.setTimeout(180_000);

const prefix = `t-regloss-${randomBytes(3).toString('hex')}`;
const ROOT = `sk_${randomBytes(24).toString('base64url')}`;
let server: RedisServer;
let db: TestDb;
let proc: SluiceProcess;
let redis: Redis;

const sql = <T = any>(text: string, params: unknown[] = []): Promise<T[]> =>
  db.dataSource.query(text, params);

async function call(
  method: string,
  path: string,
  key: string,
  body?: unknown,
  project?: string,
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (project) headers['x-sluice-project'] = project;
  const res = await fetch(proc.url() + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** A request each role may make (a worker's: a heartbeat with a wrong token → 404/409, past the guard). */
const probe: Record<string, (key: string) => Promise<number>> = {
  admin: async (k) => (await call('GET', '/keys', k)).status,
  operator: async (k) => (await call('GET', '/queues/lim', k)).status,
  producer: async (k) => (await call('GET', '/jobs?limit=1', k)).status,
  viewer: async (k) => (await call('GET', '/queues', k)).status,
  worker: async (k) =>
    (
      await call('POST', `/jobs/01a2457d-0ad0-777a-bd17-215a8ad121f4/heartbeat`, k, {
        lockToken: 'x'.repeat(32),
      })
    ).status,
};
const expected: Record<string, number[]> = {
  admin: [200],
  operator: [200, 404],
  producer: [200],
  viewer: [200],
  worker: [404, 409],
};

interface Key {
  role: string;
  project: string;
  secret: string;
}
const keys: Key[] = [];

beforeAll(async () => {
  server = await startRedisServer({ name: 'regloss' });
  redis = new Redis(server.url, { maxRetriesPerRequest: 3 });
  db = await openTestDb('regloss');
  proc = await startSluice({
    REDIS_URL: server.url,
    REDIS_PREFIX: prefix,
    DATABASE_URL: db.url,
    ROLE: 'all',
    AUTH: 'on',
    SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT,
    REDIS_CHECK_INTERVAL_MS: '1000',
    REAPER_INTERVAL_MS: '500',
    WORKER_CONCURRENCY: '4',
    LOG_LEVEL: 'info',
  });
});

afterAll(async () => {
  await killAll([proc]);
  redis?.disconnect();
  await stopAllRedisServers();
  await db?.close();
  removeDir(server?.opts.dir);
});

test('after FLUSHALL at run time: every key, project and queue setting comes back before /readyz says ok; no key ever gets 401', async () => {
  expect((await call('POST', '/projects', ROOT, { name: 'p2' })).status).toBe(201);
  for (const project of ['default', 'p2'])
    for (const role of ['admin', 'operator', 'producer', 'viewer', 'worker']) {
      const r = await call('POST', '/keys', ROOT, { name: `${role}-${project}`, role }, project);
      expect(r.status).toBe(201);
      keys.push({ role, project, secret: r.body.secret });
    }
  keys.push({ role: 'admin', project: 'root', secret: ROOT });

  // Settings of every kind, in the default project.
  expect((await call('PUT', '/queues/rstx', ROOT, { external: true })).status).toBe(200);
  expect((await call('POST', '/queues/pz/pause', ROOT)).status).toBe(200);
  const lim = await call('PUT', '/queues/lim', ROOT, {
    maxConcurrency: 3,
    rateLimit: { max: 50, durationMs: 1000 },
    defaults: { maxAttempts: 7, timeoutMs: 12_000, backoff: { type: 'fixed', delayMs: 300 } },
    keyConcurrency: 2,
    keyRateLimit: { max: 10, durationMs: 2000 },
    fairness: 'round_robin',
    agingMs: 5000,
  });
  expect(lim.status).toBe(200);
  expect(
    (
      await call('PUT', '/queues/lim/keys/acme', ROOT, {
        concurrency: 5,
        rateLimit: { max: 3, durationMs: 1000 },
      })
    ).status,
  ).toBe(200);
  expect((await call('PUT', '/queues/shared', ROOT, { maxConcurrency: 9 }, 'p2')).status).toBe(200);
  const paused = await call('POST', '/jobs', ROOT, {
    queue: 'pz',
    type: 'diag.echo',
    payload: { n: 1 },
  });
  expect(paused.status).toBe(201);
  await waitUntil(
    'the job mirrored',
    async () =>
      (await sql(`SELECT id FROM jobs WHERE id = $1::uuid`, [paused.body.id])).length === 1,
    20_000,
  );

  const settingsNow = async () => {
    const out: Record<string, unknown> = {};
    const settingsOf = (q: { counts?: unknown }) =>
      Object.fromEntries(Object.entries(q).filter(([k]) => k !== 'counts'));
    for (const q of ['rstx', 'pz', 'lim'])
      out[q] = settingsOf((await call('GET', `/queues/${q}`, ROOT)).body);
    out.shared = settingsOf((await call('GET', '/queues/shared', ROOT, undefined, 'p2')).body);
    out.keys = (await call('GET', '/queues/lim/keys', ROOT)).body;
    return out;
  };
  const before = await settingsNow();
  for (const k of keys) expect(expected[k.role]).toContain(await probe[k.role](k.secret));

  for (let round = 1; round <= 2; round++) {
    await redis.flushall();
    const seen = new Map<number, number>();
    let wentRestoring = false;
    let okAt = 0;
    const started = Date.now();
    // Every 100 ms until /readyz says ok after the loss: each key once per round; never a 401.
    while (Date.now() - started < 60_000) {
      const ready = await fetch(proc.url() + '/readyz');
      const body = await ready.json();
      if (ready.status === 503 && body.status === 'restoring') wentRestoring = true;
      const codes = await Promise.all(keys.map((k) => probe[k.role](k.secret)));
      for (const c of codes) seen.set(c, (seen.get(c) ?? 0) + 1);
      expect(codes.filter((c) => c === 401)).toEqual([]);
      if (ready.status === 200 && wentRestoring) {
        // The first round after /readyz said ok: every key works as before.
        expect(
          codes.map(
            (c, i) =>
              `${keys[i].project}/${keys[i].role}: ${expected[keys[i].role].includes(c) ? 'as before' : c}`,
          ),
        ).toEqual(keys.map((k) => `${k.project}/${k.role}: as before`));
        okAt = Date.now();
        break;
      }
      await sleepMs(100);
    }
    expect(wentRestoring).toBe(true);
    expect(okAt).toBeGreaterThan(0);
    expect(await settingsNow()).toEqual(before);
  }

  // The paused queue's job never started.
  await sleepMs(1000);
  expect((await call('GET', `/jobs/${paused.body.id}`, ROOT)).body.status).toBe('waiting');
  expect(proc.output()).toContain('registries given back from postgres');
});

/** Waits for a FLUSHALL's rebuild: /readyz 503 restoring, then 200. */
async function flushAndWaitRestored(): Promise<void> {
  await redis.flushall();
  await waitUntil(
    '/readyz restoring',
    async () => (await (await fetch(proc.url() + '/readyz')).json()).status === 'restoring',
    20_000,
    50,
  );
  await waitUntil(
    '/readyz ok',
    async () => (await fetch(proc.url() + '/readyz')).status === 200,
    60_000,
    100,
  );
}

test('an external queue stays external after a Redis loss: its job is never run by the in-process workers', async () => {
  expect((await call('PUT', '/queues/rst5', ROOT, { external: true })).status).toBe(200);
  const job = await call('POST', '/jobs', ROOT, { queue: 'rst5', type: 'x', maxAttempts: 1 });
  expect(job.status).toBe(201);
  await waitUntil(
    'the job mirrored',
    async () => (await sql(`SELECT id FROM jobs WHERE id = $1::uuid`, [job.body.id])).length === 1,
    20_000,
  );
  await flushAndWaitRestored();
  expect((await call('GET', '/queues/rst5', ROOT)).body.external).toBe(true);
  // In-process workers poll every queue they serve (`*`): several rounds pass.
  await sleepMs(3000);
  const ev = await sql<{ event: string }>(
    `SELECT event FROM job_timeline WHERE job_id = $1::uuid`,
    [job.body.id],
  );
  expect(ev.map((e) => e.event).filter((e) => e !== 'enqueued' && e !== 'stalled')).toEqual([]);
  expect((await call('GET', `/jobs/${job.body.id}`, ROOT)).body.status).toBe('waiting');
  expect(proc.output()).not.toContain('no handler registered');
  // The worker key claims it through the external protocol, as before the loss.
  const worker = keys.find((k) => k.role === 'worker' && k.project === 'default')!;
  const claim = await call('POST', '/queues/rst5/claim', worker.secret, {
    workerId: 'ext-1',
    max: 1,
  });
  expect([claim.status, claim.body.jobs.map((j: { id: string }) => j.id)]).toEqual([
    200,
    [job.body.id],
  ]);
});
