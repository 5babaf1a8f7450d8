import { SchedulerRegistry } from '@nestjs/schedule';
import type { SluiceConfig } from '../../../src/config/config';
import { MaintenanceService } from '../../../src/maintenance/maintenance.service';
import { openTestDb, TestDb, v7AtSql } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';
import { silentLog } from './support';

/** Retention pruning in the scheduler role: registered there, and safe with several replicas at once. */
describe('retention pruning in the scheduler role', () => {
  let db: TestDb;
  let s: TestStore;
  beforeAll(async () => {
    db = await openTestDb('sched_ret');
    s = await openStore('sched-ret');
  });
  afterAll(async () => {
    await s?.close();
    await db?.close();
  });

  const service = (roles: string[]) =>
    new MaintenanceService(
      { retentionDays: 30, roles: new Set(roles), reaperIntervalMs: 60_000, redisPrefix: s.prefix } as unknown as SluiceConfig,
      silentLog as never,
      s.stores.workerRegistry,
      s.stores.jobs,
      s.stores.queues,
      s.stores.flows,
      new SchedulerRegistry(),
      db.dataSource,
    );

  it('runs as a @nestjs/schedule interval in the scheduler role, with or without the audit role', () => {
    for (const [roles, expected] of [
      [['scheduler'], true],
      [['scheduler', 'audit'], true],
    ] as const) {
      const m = service([...roles]);
      m.onApplicationBootstrap();
      expect((m as unknown as { scheduler: SchedulerRegistry }).scheduler.getIntervals().includes('retention')).toBe(expected);
      m.onApplicationShutdown();
    }
  });

  it('three replicas pruning at once delete every old terminal job exactly once and keep the rest', async () => {
    await db.dataSource.query(
      `INSERT INTO jobs (id, queue, type, status, max_attempts, backoff, timeout_ms, payload, created_at, run_at, finished_at, updated_at, last_event_ms, last_event_seq)
       SELECT ${v7AtSql("now() - interval '40 days'")}, 'q', 't', CASE WHEN g % 2 = 0 THEN 'completed' ELSE 'cancelled' END, 3, 'e', 1000, '{}',
              now() - interval '40 days', now() - interval '40 days', now() - interval '40 days', now() - interval '40 days', 0, 0
       FROM generate_series(1, 2500) g
       UNION ALL
       SELECT ${v7AtSql('now()')}, 'q', 't', 'completed', 3, 'e', 1000, '{}', now(), now(), now(), now(), 0, 0 FROM generate_series(1, 10)`,
    );
    const replicas = [service(['scheduler']), service(['scheduler']), service(['scheduler'])];
    // Three rounds of three replicas at once; a replica finding the lock held skips its round.
    for (let round = 0; round < 3; round++) await Promise.all(replicas.map((r) => r.pruneOnce()));
    const rows = await db.dataSource.query(`SELECT status, count(*)::int AS n FROM jobs GROUP BY 1`);
    expect(rows).toEqual([{ status: 'completed', n: 10 }]);
    // The per-status counters (statement triggers) saw each row deleted once: never negative, equal to the rows.
    const counts = await db.dataSource.query(`SELECT status, n::int AS n FROM job_counts WHERE queue = 'q' AND n <> 0 ORDER BY 1`);
    expect(counts).toEqual([{ status: 'completed', n: 10 }]);
  });
});
