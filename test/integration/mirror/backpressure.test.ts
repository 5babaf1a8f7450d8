/**
 * Load shedding on the audit backlog (API.md: 503 `unavailable` when the
 * audit backlog is over its bound). While no mirror writer mirrors the
 * streams (as when PostgreSQL is unreachable) events wait in Redis; once
 * they are more than AUDIT_MAX_BACKLOG, enqueue throws UnavailableError and
 * writes nothing; after a writer has drained the streams into PostgreSQL,
 * enqueue is accepted again. Real Redis, real PostgreSQL.
 *
 * 1. The guard on a store (BacklogGuard + RedisJobStore.setAdmission),
 *    refreshed by hand: the exact bound, nothing written by a refused call
 *    (not even a new queue's name), the metric numbers, the way back.
 * 2. The Nest wiring (AppModule, ROLE=api, AUDIT_MAX_BACKLOG=3): the guard
 *    refreshes itself every second, logs one warn line when the backlog
 *    crosses the bound and one info line when it falls back.
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import pino from 'pino';
import { AppModule } from '../../../src/app.module';
import { BacklogGuard } from '../../../src/mirror/backlog';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { BacklogModule, BacklogService } from '../../../src/mirror/backlog.module';
import { ALL_ROLES, loadConfig } from '../../../src/config/config';
import { UnavailableError } from '../../../src/core/errors';
import { normalizeEnqueue } from '../../../src/core/job-options';
import type { RedisClient } from '../../../src/redis/connection';
import { JobStore } from '../../../src/core/ports';
import { outbox } from '../../support/mirror';
import { waitUntil } from '../../support/cases';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, REDIS_URL, TestStore } from '../../support/redis';

jest.setTimeout(60_000);

let db: TestDb;
const stores: TestStore[] = [];
const writers: MirrorWriter[] = [];
beforeAll(async () => {
  db = await openTestDb('backpressure');
});
afterAll(async () => {
  for (const w of writers) await w.stop();
  for (const s of stores) await s.close();
  await db.close();
});

async function store(name: string): Promise<TestStore> {
  const s = await openStore(name);
  stores.push(s);
  return s;
}

const jobs = (queue: string, n: number) =>
  Array.from({ length: n }, (_, i) => normalizeEnqueue({ queue, type: 't', payload: { i } }, 1e6));

/** Every key under the prefix with its full content: "nothing written" means this is unchanged. */
async function prefixState(redis: RedisClient, prefix: string): Promise<Record<string, unknown>> {
  const keys = (await redis.keys(`${prefix}:*`)).sort();
  const out: Record<string, unknown> = {};
  for (const k of keys) {
    const type = await redis.type(k);
    if (type === 'hash') out[k] = await redis.hgetall(k);
    else if (type === 'zset') out[k] = await redis.zrange(k, 0, -1, 'WITHSCORES');
    else if (type === 'set') out[k] = (await redis.smembers(k)).sort();
    else if (type === 'list') out[k] = await redis.lrange(k, 0, -1);
    else if (type === 'stream') out[k] = await redis.xrange(k, '-', '+');
    else out[k] = [type, await redis.get(k)];
  }
  return out;
}

/** A writer mirroring every queue of `t`'s prefix into the test database. */
function startWriter(t: TestStore, id: string): MirrorWriter {
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: id, idleMs: 20 });
  writers.push(w);
  w.start();
  return w;
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('enqueue was accepted');
    },
    (e: unknown) => e,
  );

test('over AUDIT_MAX_BACKLOG pending events enqueue is refused with UnavailableError and writes nothing; accepted again once drained', async () => {
  const t = await store('backpressure-guard');
  const changes: [boolean, number][] = [];
  const guard = new BacklogGuard(t.stores, 5, (over, s) => changes.push([over, s.pending]));
  t.store.setAdmission(() => guard.admit());

  // Up to the bound: accepted (the bound is "more than 5 waiting").
  await t.store.enqueue(jobs('bp-a', 5));
  expect(await guard.refresh()).toMatchObject({ pending: 5 });
  expect(guard.overLimit).toBe(false);
  const [sixth] = await t.store.enqueue(jobs('bp-a', 1));
  expect(sixth.status).toBe('waiting');
  expect(await guard.refresh()).toMatchObject({ pending: 6 });
  expect(guard.overLimit).toBe(true);
  expect(changes).toEqual([[true, 6]]);

  // Refused: on a known queue, on a new one, and a batch over both; nothing written anywhere.
  const before = await prefixState(t.redis, t.prefix);
  for (const batch of [jobs('bp-a', 1), jobs('bp-new', 2), [...jobs('bp-a', 1), ...jobs('bp-new', 1)]]) {
    const e = await refusal(t.store.enqueue(batch));
    expect(e).toBeInstanceOf(UnavailableError);
    expect((e as UnavailableError).code).toBe('unavailable');
    expect((e as Error).message).toMatch(/^audit backlog over its bound: 6 events wait in Redis .*\(AUDIT_MAX_BACKLOG=5\)/);
  }
  expect(await prefixState(t.redis, t.prefix)).toEqual(before);
  expect(await t.stores.queues.list()).toEqual(['bp-a']);
  expect(guard.metrics).toMatchObject({ pending: 6, max: 5, overLimit: true, refusedEnqueues: 3 });
  expect(guard.metrics.lagMs).toBeGreaterThanOrEqual(0);

  // A writer drains the streams into PostgreSQL; the next refresh lets enqueue through again.
  startWriter(t, 'bp-writer-1');
  await waitUntil('the streams drained', async () => (await outbox(t.redis, t, ['bp-a'])).len === 0, 20_000);
  expect(await guard.refresh()).toMatchObject({ pending: 0, lagMs: 0 });
  expect(guard.overLimit).toBe(false);
  expect(changes).toEqual([
    [true, 6],
    [false, 0],
  ]);
  const [again] = await t.store.enqueue(jobs('bp-new', 1));
  expect(again.status).toBe('waiting');
  expect((await t.store.getJob('bp-new', again.id))?.status).toBe('waiting');
  expect(guard.metrics).toMatchObject({ pending: 0, overLimit: false, refusedEnqueues: 3 });

  // PostgreSQL holds the six accepted jobs and nothing of the refused calls.
  const rows = await db.dataSource.query(`SELECT queue, event, count(*)::int AS n FROM job_timeline WHERE queue = 'bp-a' GROUP BY 1, 2`);
  expect(rows).toEqual([{ queue: 'bp-a', event: 'enqueued', n: 6 }]);
  t.store.setAdmission(null);
});

test('every role installs the guard (BacklogModule is imported whatever ROLE is)', () => {
  const log = pino({ level: 'silent' });
  for (const role of [...ALL_ROLES, 'all']) {
    expect(AppModule.forRoles(loadConfig({ ROLE: role }), log).imports).toContain(BacklogModule);
  }
});

test('Nest wiring (ROLE=api): refreshed every second, 503 past the bound with a warn line, back with an info line', async () => {
  const t = await store('backpressure-nest');
  const lines: { level: number; msg: string; pending?: number; max?: number }[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  const config = loadConfig({ ROLE: 'api', REDIS_URL, DATABASE_URL: db.url, REDIS_PREFIX: t.prefix, AUDIT_MAX_BACKLOG: '3' });
  const app = await NestFactory.createApplicationContext(AppModule.forRoles(config, log), { logger: false });
  try {
    const appStore = app.get(JobStore);
    const backlog = app.get(BacklogService);
    expect(backlog.metrics).toMatchObject({ pending: 0, max: 3, overLimit: false, refusedEnqueues: 0 });
    expect(backlog.metrics.refreshedAt).toBeGreaterThan(0);

    await appStore.enqueue(jobs('bp-nest', 4));
    // The guard notices within its refresh period (1 s), by itself.
    const e = await waitUntil(
      'enqueue refused',
      async () => {
        try {
          await appStore.enqueue(jobs('bp-nest', 1));
          return undefined; // accepted: not noticed yet (it adds to the backlog, as a burst would)
        } catch (err) {
          return err;
        }
      },
      3000,
      100,
    );
    expect(e).toBeInstanceOf(UnavailableError);
    const pending = backlog.metrics.pending;
    expect(pending).toBeGreaterThan(3);
    expect((e as Error).message).toContain('(AUDIT_MAX_BACKLOG=3)');
    const warn = lines.filter((l) => l.level === 40 && /^audit backlog over AUDIT_MAX_BACKLOG/.test(l.msg));
    expect(warn).toEqual([expect.objectContaining({ pending, max: 3 })]);

    // Refused calls write nothing, and the guard logs the crossing once, not per refusal.
    const before = await prefixState(t.redis, t.prefix);
    for (let i = 0; i < 5; i++) await expect(appStore.enqueue(jobs('bp-nest', 2))).rejects.toBeInstanceOf(UnavailableError);
    expect(await prefixState(t.redis, t.prefix)).toEqual(before);
    expect(backlog.metrics.refusedEnqueues).toBe(6);

    // A writer drains the backlog; within a second enqueue is accepted again, with one info line.
    startWriter(t, 'bp-writer-2');
    await waitUntil(
      'enqueue accepted again',
      async () => (await appStore.enqueue(jobs('bp-nest', 1)).then(() => true, () => false)) || undefined,
      10_000,
      100,
    );
    const info = lines.filter((l) => l.level === 30 && /^audit backlog back within AUDIT_MAX_BACKLOG/.test(l.msg));
    expect(info).toEqual([expect.objectContaining({ max: 3 })]);
    expect(lines.filter((l) => /^audit backlog/.test(l.msg)).map((l) => l.level)).toEqual([40, 30]);
    expect(backlog.metrics.overLimit).toBe(false);
  } finally {
    await app.close();
  }
});
