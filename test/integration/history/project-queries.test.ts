/**
 * The history queries' project condition (src/history/common.ts
 * `projectCondition`) on a real, migrated PostgreSQL database, below the
 * in-memory filter HistoryQueries adds: every filter combination of
 * listJobs and listDlq, the recent jobs and the throughput of one project
 * hold exactly its rows, across pages. Queues `q` (default), `acme/q`,
 * `acme-x/q` (a project whose name starts like acme's), `acme_/q` and `acmex/q` (`_`, a
 * LIKE wildcard) share the bare name and the job types.
 */
import { listDlq, listJobs, type Page } from '../../../src/history';
import { throughputSql } from '../../../src/history/throughput';
import { recentJobs } from '../../../src/dashboard/recent-jobs';
import type { Job } from '../../../src/core/job';
import { projectOf } from '../../../src/core/project-queue';
import { JOB_STATUSES } from '../../../src/core/job-status';
import { openTestDb, type TestDb, v7At } from '../../support/postgres';

const QUEUES = ['q', 'acme/q', 'acme-x/q', 'acme_/q', 'acmex/q', 'default2/q', 'other'];
const PROJECTS = ['default', 'acme', 'acme-x', 'acme_', 'acmex', 'default2', 'nobody'];
const TYPES = ['t.a', 't.b'];
let db: TestDb;
const rows: { id: string; queue: string; type: string; status: string; ms: number }[] = [];

beforeAll(async () => {
  db = await openTestDb('projq');
  const now = Date.now();
  let i = 0;
  for (const queue of QUEUES) for (const type of TYPES) for (const status of JOB_STATUSES) for (let k = 0; k < 3; k++) rows.push({ id: v7At(now - 60_000 + i * 10), queue, type, status, ms: now - 30_000 + i++ });
  await db.dataSource.query(
    `INSERT INTO jobs (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, payload, execution_seq,
                       created_at, run_at, finished_at, updated_at, last_event_ms, last_event_seq)
     SELECT id, q, ty, s, 0, 0, 3, 'exponential|2000|3600000|equal', 600000, '{}', 0, to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0),
            CASE WHEN s IN ('completed', 'failed', 'cancelled') THEN to_timestamp(ms / 1000.0) END, to_timestamp(ms / 1000.0), ms::bigint, 0
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::float8[]) AS u(id, q, ty, s, ms)`,
    [rows.map((r) => r.id), rows.map((r) => r.queue), rows.map((r) => r.type), rows.map((r) => r.status), rows.map((r) => r.ms)],
  );
  await db.dataSource.query(
    `INSERT INTO dead_letter_jobs (job_id, queue, type, payload, last_error, attempts, failed_at)
     SELECT id, queue, type, payload, 'x', 3, finished_at FROM jobs WHERE status = 'failed'`,
  );
});
afterAll(() => db?.close());

async function all(read: (cursor?: string) => Promise<Page<Job>>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await read(cursor);
    ids.push(...page.items.map((j) => j.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return ids;
}

const sorted = (ids: string[]) => [...ids].sort().reverse();

test.each(PROJECTS)('listJobs of %s: every filter combination holds exactly its rows, newest first, across pages', async (project) => {
  for (const status of [undefined, 'waiting', 'failed']) {
    for (const type of [undefined, 't.b']) {
      const expected = rows.filter((r) => projectOf(r.queue) === project && (!status || r.status === status) && (!type || r.type === type)).map((r) => r.id);
      const got = await all((cursor) => listJobs(db.dataSource, { project, status, type, cursor, limit: 7 }));
      expect(got).toEqual(sorted(expected));
    }
  }
});

test.each(PROJECTS)('listDlq of %s: with and without a type, exactly its dead-letter jobs', async (project) => {
  for (const type of [undefined, 't.a']) {
    const expected = rows.filter((r) => projectOf(r.queue) === project && r.status === 'failed' && (!type || r.type === type));
    const got = await all((cursor) => listDlq(db.dataSource, { project, type, cursor, limit: 4 }));
    expect(new Set(got)).toEqual(new Set(expected.map((r) => r.id)));
    expect(got).toHaveLength(expected.length);
  }
});

test.each(PROJECTS)('recent jobs and throughput of %s count only its queues', async (project) => {
  const mine = rows.filter((r) => projectOf(r.queue) === project);
  const recent = await recentJobs(db.dataSource, project);
  expect(recent.map((j) => j.id)).toEqual(mine.sort((a, b) => b.ms - a.ms).slice(0, 20).map((r) => r.id));
  const q = throughputSql(project);
  const [t] = await db.dataSource.query(q.sql, q.params(Date.now() - 120_000));
  expect(t).toEqual({ completed: mine.filter((r) => r.status === 'completed').length, failed: mine.filter((r) => r.status === 'failed').length });
});
