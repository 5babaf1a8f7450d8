import { batchScript, planBatch, type PlannedStatement } from '../../../src/mirror/batch-writer';
import { project } from '../../../src/mirror/projection';
import { DAY_MS, dayStart, ensureDays } from '../../../src/postgres/partitions';
import { openTestDb, TestDb } from '../../support/postgres';
import { enqueuedEntry, mirror, runEntries } from '../../support/history-rows';
import { v7At } from '../../support/postgres';

/**
 * How PostgreSQL runs the writer's statements that join `jobs` with a batch
 * (src/mirror/batch-writer.ts): each id looked up in the primary key, never
 * a scan of a range of `jobs` compared row by row with the whole batch. With
 * the batch's id span in the statement, a fresh day partition (no
 * statistics) made the planner scan the span once and test every pair: 1,000
 * patches met 999,000 join-filter rejections (54 µs a row instead of 12).
 * The plans are read with EXPLAIN ANALYZE in a transaction rolled back,
 * under the settings the writer's batch sets.
 */
let db: TestDb;
beforeAll(async () => {
  db = await openTestDb('writer_plans');
  const today = dayStart(Date.now());
  await ensureDays(db.dataSource, today - DAY_MS, today + DAY_MS);
});
afterAll(async () => {
  await db?.close();
});

/** The plan of one planned statement, run (and rolled back) after the batch's SET LOCAL settings. */
async function planOf(st: PlannedStatement): Promise<string> {
  const plan = await explain(st);
  if (process.env.SHOW_PLANS) process.stdout.write(`${plan}\n\n`);
  return plan;
}

async function explain(st: PlannedStatement): Promise<string> {
  const script = batchScript([st]);
  const cut = script.indexOf(';\n');
  const qr = db.dataSource.createQueryRunner();
  await qr.connect();
  try {
    await qr.startTransaction();
    await qr.query(script.slice(0, cut));
    const rows = (await qr.query(`EXPLAIN (ANALYZE, COSTS off, TIMING off, SUMMARY off) ${script.slice(cut + 2)}`)) as { 'QUERY PLAN': string }[];
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await qr.rollbackTransaction();
    await qr.release();
  }
}

it('patches and DLQ rows find their jobs by primary key, one lookup per id, in a batch of 1,000', async () => {
  const q = 'plans';
  const t0 = Date.now() - 60_000;
  const ids = Array.from({ length: 1000 }, (_, i) => v7At(t0 + i));
  // Other jobs between the batch's own (another queue's, created in the same ms): a range scan would read them too.
  const others = Array.from({ length: 3000 }, (_, i) => v7At(t0 + (i % 1000)));
  await mirror(db.dataSource, [...ids, ...others].map((id, i) => enqueuedEntry(i < ids.length ? q : 'plans-other', id, t0)));
  // Their runs in one later batch: 990 complete, 10 fail for good (into the DLQ).
  const runs = ids.flatMap((id, i) => runEntries(q, id, t0 + 30_000 + i, i < 990 ? 'completed' : 'failed'));
  const plan = planBatch(project(runs), true);
  const patch = plan.find((st) => st.sql.startsWith('UPDATE jobs'))!;
  const dlq = plan.find((st) => st.sql.includes('INSERT INTO dead_letter_jobs'))!;
  expect(patch).toBeDefined();
  expect(dlq).toBeDefined();

  const patchPlan = await planOf(patch);
  expect(patchPlan).toMatch(/Index Cond: \(id = u\.id\)/);
  expect(patchPlan).not.toMatch(/Join Filter|Rows Removed by Join Filter|Materialize|Seq Scan on jobs/);
  expect(patchPlan).toMatch(/Nested Loop \(actual rows=1000 loops=1\)/);

  // Ten jobs bound for the DLQ: ten lookups of `jobs` by id and ten of their events by job id, no scan of either table.
  const dlqPlan = await planOf(dlq);
  expect(dlqPlan).toMatch(/Index Cond: \(id = u\.id\)/);
  expect(dlqPlan).toMatch(/Index Cond: \(job_id = u\.id\)/);
  expect(dlqPlan).toMatch(/Index Scan on job_events_d\d{8}_pkey \(actual rows=1 loops=10\)/);
  expect(dlqPlan).not.toMatch(/Rows Removed by Join Filter|Materialize|Seq Scan|Index Cond: \(status = /);

  const remove = plan.find((st) => st.sql.startsWith('DELETE FROM dead_letter_jobs'))!;
  const removePlan = await planOf(remove);
  expect(removePlan).not.toMatch(/Seq Scan on jobs|Materialize/);
});
