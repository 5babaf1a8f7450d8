import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';
import { createRedisStores } from '../../../src/redis/stores';
import { ScheduleRepository } from '../../../src/schedules/schedule-repository';
import { createSchedule, FakeClock, materializer, slotsOf } from './support';

/**
 * The cron materializer against real PostgreSQL and Redis, with a fake clock
 * driving time (CASES C14 and the missed-run, early-timer and replica rules).
 */
describe('schedule materializer (real Postgres + Redis, fake clock)', () => {
  let db: TestDb;
  let s: TestStore;
  let repo: ScheduleRepository;

  beforeAll(async () => {
    db = await openTestDb('sched_mat');
    s = await openStore('sched-mat');
    repo = new ScheduleRepository(db.dataSource);
  });
  // Each test's materializers load every enabled schedule: start from none.
  beforeEach(async () => {
    await db.dataSource.query('DELETE FROM schedules');
  });
  afterAll(async () => {
    await s?.close();
    await db?.close();
  });

  /** Ticks `m` every `stepMs` from `from` to `to` (ISO). */
  async function run(m: ReturnType<typeof materializer>, clock: FakeClock, from: string, to: string, stepMs: number): Promise<void> {
    for (clock.set(from); clock.t <= Date.parse(to); clock.t += stepMs) await m.tick();
  }

  it('C14 spring-forward: 30 2 and 30 1 in New York fire once a day; 02:30 fires at 03:00 EDT', async () => {
    const clock = new FakeClock(Date.parse('2024-03-09T00:00:00Z'));
    const a = await createSchedule(repo, clock, { cron: '30 2 * * *', timezone: 'America/New_York' });
    const b = await createSchedule(repo, clock, { cron: '30 1 * * *', timezone: 'America/New_York' });
    await run(materializer(repo, s.store, clock), clock, '2024-03-09T00:00:00Z', '2024-03-11T23:59:00Z', 5 * 60_000);
    expect(await slotsOf(s.stores, 'sched', a.id)).toEqual(['2024-03-09T07:30:00.000Z', '2024-03-10T07:00:00.000Z', '2024-03-11T06:30:00.000Z']);
    expect(await slotsOf(s.stores, 'sched', b.id)).toEqual(['2024-03-09T06:30:00.000Z', '2024-03-10T06:30:00.000Z', '2024-03-11T05:30:00.000Z']);
  });

  it('C14 fall-back: 01:30 fires only at its first occurrence (EDT)', async () => {
    const clock = new FakeClock(Date.parse('2024-11-02T00:00:00Z'));
    const a = await createSchedule(repo, clock, { cron: '30 2 * * *', timezone: 'America/New_York' });
    const b = await createSchedule(repo, clock, { cron: '30 1 * * *', timezone: 'America/New_York' });
    await run(materializer(repo, s.store, clock), clock, '2024-11-02T00:00:00Z', '2024-11-04T23:59:00Z', 5 * 60_000);
    expect(await slotsOf(s.stores, 'sched', a.id)).toEqual(['2024-11-02T06:30:00.000Z', '2024-11-03T07:30:00.000Z', '2024-11-04T07:30:00.000Z']);
    expect(await slotsOf(s.stores, 'sched', b.id)).toEqual(['2024-11-02T05:30:00.000Z', '2024-11-03T05:30:00.000Z', '2024-11-04T06:30:00.000Z']);
  });

  it('C14 Kolkata: 0 9 * * 1-5 fires at 03:30 UTC on weekdays', async () => {
    const clock = new FakeClock(Date.parse('2024-03-08T00:00:00Z')); // a Friday
    const k = await createSchedule(repo, clock, { cron: '0 9 * * 1-5', timezone: 'Asia/Kolkata' });
    await run(materializer(repo, s.store, clock), clock, '2024-03-08T00:00:00Z', '2024-03-11T12:00:00Z', 15 * 60_000);
    expect(await slotsOf(s.stores, 'sched', k.id)).toEqual(['2024-03-08T03:30:00.000Z', '2024-03-11T03:30:00.000Z']);
  });

  it('scheduler stopped across 5 minutes: exactly one catch-up run (the newest slot), next computed from now', async () => {
    const clock = new FakeClock(Date.parse('2024-05-01T10:00:30Z'));
    const sc = await createSchedule(repo, clock, { cron: '* * * * *', timezone: 'UTC' });
    const first = materializer(repo, s.store, clock);
    expect(await first.tick()).toBe(0);
    clock.set('2024-05-01T10:01:00.000Z');
    expect(await first.tick()).toBe(1);
    await first.stop(); // no scheduler from here ...
    clock.set('2024-05-01T10:06:30.000Z'); // ... across five slots (10:02 .. 10:06)
    const restarted = materializer(repo, s.store, clock);
    expect(await restarted.tick()).toBe(1);
    expect(await restarted.tick()).toBe(0);
    expect(await slotsOf(s.stores, 'sched', sc.id)).toEqual(['2024-05-01T10:01:00.000Z', '2024-05-01T10:06:00.000Z']);
    const row = await repo.get(sc.id);
    expect(new Date(row!.nextRunAt!).toISOString()).toBe('2024-05-01T10:07:00.000Z');
    expect(new Date(row!.lastRunAt!).toISOString()).toBe('2024-05-01T10:06:30.000Z');
    clock.set('2024-05-01T10:07:00.000Z');
    expect(await restarted.tick()).toBe(1);
  });

  it('a timer that fires a few ms early fires nothing, and the slot fires once', async () => {
    const clock = new FakeClock(Date.parse('2024-05-02T10:00:00.500Z'));
    const sc = await createSchedule(repo, clock, { cron: '* * * * * *', timezone: 'UTC' });
    const m = materializer(repo, s.store, clock);
    const slot = Date.parse('2024-05-02T10:00:01.000Z');
    for (const t of [slot - 3, slot - 1, slot, slot + 1, slot + 40, slot + 999]) {
      clock.set(t);
      await m.tick();
    }
    expect(await slotsOf(s.stores, 'sched', sc.id)).toEqual(['2024-05-02T10:00:01.000Z']);
  });

  it('three replicas racing on every slot: each slot exactly once', async () => {
    const clock = new FakeClock(Date.parse('2024-05-03T10:00:00.200Z'));
    const sc = await createSchedule(repo, clock, { cron: '* * * * * *', timezone: 'UTC' });
    const replicas = [0, 1, 2].map(() => materializer(repo, s.store, clock));
    for (let i = 0; i < 40; i++) {
      clock.t += 1000;
      const fired = await Promise.all(replicas.map((r) => r.tick()));
      expect(fired.reduce((a, b) => a + b, 0)).toBe(1);
    }
    const slots = await slotsOf(s.stores, 'sched', sc.id);
    expect(slots).toHaveLength(40);
    expect(new Set(slots).size).toBe(40);
  });

  it('a replica whose idempotency key expired still cannot fire a slot again (Postgres compare-and-set)', async () => {
    const short = createRedisStores(s.redis, s.prefix, { maxAttempts: 3, timeoutMs: 600_000, idempotencyTtlMs: 1000 }, s.scripts);
    const clock = new FakeClock(Date.parse('2024-05-04T10:00:00.500Z'));
    const sc = await createSchedule(repo, clock, { cron: '* * * * *', timezone: 'UTC' });
    const a = materializer(repo, short.jobs, clock);
    const b = materializer(repo, short.jobs, clock);
    await Promise.all([a.tick(), b.tick()]); // both cache nextRunAt 10:01
    clock.set('2024-05-04T10:01:00.000Z');
    expect(await a.tick()).toBe(1);
    await sleep(1300); // the slot's idempotency key is gone from Redis
    clock.set('2024-05-04T10:01:00.800Z');
    expect(await b.tick()).toBe(0); // b's cache still says 10:01 is due
    expect(await slotsOf(short, 'sched', sc.id)).toEqual(['2024-05-04T10:01:00.000Z']);
  });

  it('deleted, disabled or edited: a replica with a stale cache cannot fire the old definition', async () => {
    const clock = new FakeClock(Date.parse('2024-05-05T10:00:30Z'));
    const del = await createSchedule(repo, clock, { cron: '* * * * *' });
    const off = await createSchedule(repo, clock, { cron: '* * * * *' });
    const edit = await createSchedule(repo, clock, { cron: '* * * * *', payload: { v: 1 } });
    const m = materializer(repo, s.store, clock);
    await m.tick(); // caches all three
    await repo.delete(del.id, 'default');
    await repo.update(off.id, 'default', { ...off, enabled: false }, null, clock.now());
    await repo.update(edit.id, 'default', { ...edit, payload: { v: 2 } }, edit.nextRunAt, clock.now());
    clock.set('2024-05-05T10:01:00Z');
    expect(await m.tick()).toBe(1);
    expect(await slotsOf(s.stores, 'sched', del.id)).toEqual([]);
    expect(await slotsOf(s.stores, 'sched', off.id)).toEqual([]);
    const [slot] = await slotsOf(s.stores, 'sched', edit.id);
    expect(slot).toBe('2024-05-05T10:01:00.000Z');
    const jobs = await s.redis.zrange(s.keys('sched').waiting, 0, -1);
    const payloads = await Promise.all(jobs.map((id) => s.store.getJob('sched', id)));
    expect(payloads.find((j) => j?.idempotencyKey?.includes(edit.id))?.payload).toEqual({ v: 2 });
  });

  it('enqueue failure (Redis refusing): the same slot is retried and fires once', async () => {
    const clock = new FakeClock(Date.parse('2024-05-06T10:00:30Z'));
    const sc = await createSchedule(repo, clock, { cron: '* * * * *' });
    let failures = 1;
    const m = materializer(repo, s.store, clock, {
      enqueue: async (j) => {
        if (failures-- > 0) throw new Error('Connection is closed.');
        return (await s.store.enqueue([j]))[0];
      },
    });
    clock.set('2024-05-06T10:01:00Z');
    expect(await m.tick()).toBe(0);
    clock.set('2024-05-06T10:01:00.500Z');
    expect(await m.tick()).toBe(0); // retry not before retryMs
    clock.set('2024-05-06T10:01:01.000Z');
    expect(await m.tick()).toBe(1);
    expect(await slotsOf(s.stores, 'sched', sc.id)).toEqual(['2024-05-06T10:01:00.000Z']);
    expect((await repo.get(sc.id))!.claimUntil).toBeNull();
  });

  it('a replica that died after its claim: another one retries the slot after the lease, without a duplicate', async () => {
    const clock = new FakeClock(Date.parse('2024-05-07T10:00:30Z'));
    const died = await createSchedule(repo, clock, { cron: '* * * * *' });
    const diedAfterEnqueue = await createSchedule(repo, clock, { cron: '* * * * *' });
    const slot = Date.parse('2024-05-07T10:01:00Z');
    clock.set(slot);
    // The dead replica: claimed both; enqueued only the second, confirmed neither.
    for (const sc of [died, diedAfterEnqueue]) expect(await repo.claimSlot(sc.id, 1, slot, slot + 60_000, slot + 5000)).toBe('won');
    const { slotJob } = await import('../../../src/schedules/schedule-definition');
    await s.store.enqueue([slotJob(diedAfterEnqueue, slot)]);
    const m = materializer(repo, s.store, clock, { leaseMs: 5000 });
    clock.set(slot + 4000);
    expect(await m.tick()).toBe(0); // lease still running
    clock.set(slot + 5000);
    expect(await m.tick()).toBe(2);
    expect(await slotsOf(s.stores, 'sched', died.id)).toEqual(['2024-05-07T10:01:00.000Z']);
    expect(await slotsOf(s.stores, 'sched', diedAfterEnqueue.id)).toEqual(['2024-05-07T10:01:00.000Z']);
  });
});
