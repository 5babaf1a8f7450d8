import { DataSource } from 'typeorm';
import { createDataSource, ensureDatabase } from '../../../src/postgres/data-source';
import { dropDatabase, freshDatabaseUrl } from '../../support/postgres';
import { jobEntries, mirror } from '../../support/history-rows';
import { expectedEventRow } from '../../support/mirror';

/**
 * Migration 1796001900000-FoldedExecutionEvents taken back and applied
 * again: the claimed and completed events the execution rows held go back
 * to job_events rows first (no event lost by a downgrade), the columns and
 * the view go; applied again, the history lists every event once.
 */
let url: string;
let ds: DataSource;
afterAll(async () => {
  if (ds?.isInitialized) await ds.destroy();
  if (url) await dropDatabase(url);
});

/** Event rows of `ids` in the shape of expectedEventRow, from `source` (a table or the view). */
async function rows(source: string, ids: string[]) {
  return ds.query(
    `SELECT queue, stream_ms::text, stream_seq::text, job_id::text, round(extract(epoch FROM at) * 1000)::float8 AS at_ms, event,
            from_status, to_status, attempt, execution_seq, worker_id, reason, error, data
     FROM ${source} WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, stream_ms, stream_seq`,
    [ids],
  );
}

it('down moves the held events back into job_events; up again lists each event once', async () => {
  url = freshDatabaseUrl('foldmig');
  await ensureDatabase(url);
  // Up to this migration (the later ones are not its to undo).
  ds = createDataSource(url, 2, 'DependencyQueues1796002050000');
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  const now = Date.now();
  const jobs = [jobEntries('orders', now - 5000), jobEntries('orders', now - 4000, now - 3000, 'failed'), jobEntries('orders', now - 2000, 0, false)];
  const ids = jobs.map((j) => j.id);
  const entries = jobs.flatMap((j) => j.entries).filter((e) => e.fields.e !== 'log');
  await mirror(ds, jobs.flatMap((j) => j.entries));
  const want = [...entries].sort((a, b) => (a.fields.j < b.fields.j ? -1 : a.fields.j > b.fields.j ? 1 : 0)).map(expectedEventRow);
  expect(await rows('job_timeline', ids)).toEqual(want);
  // Held by the execution rows: only the enqueued and failed events are job_events rows.
  expect((await rows('job_events', ids)).map((r: { event: string }) => r.event).sort()).toEqual(['enqueued', 'enqueued', 'enqueued', 'failed']);

  await ds.undoLastMigration({ transaction: 'each' });
  expect(await ds.query(`SELECT to_regclass('job_timeline') AS v`)).toEqual([{ v: null }]);
  expect(await ds.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'job_executions' AND column_name = 'claim_ms'`)).toEqual([]);
  expect(await rows('job_events', ids)).toEqual(want);

  const again = await ds.runMigrations({ transaction: 'each' });
  expect(again.map((m) => m.name)).toEqual(['FoldedExecutionEvents1796001900000']);
  expect(await rows('job_timeline', ids)).toEqual(want);
  // A writer replaying the same entries now changes nothing.
  await mirror(ds, jobs.flatMap((j) => j.entries), false);
  expect(await rows('job_timeline', ids)).toEqual(want);
});
