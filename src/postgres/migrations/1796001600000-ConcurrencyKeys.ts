import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Flow control per key (API.md v1.1/v1.2, issue 20):
 * - `jobs.concurrency_key`: the job's concurrency key as its `enqueued`
 *   event carried it (stream field `ck`), null for jobs without one and for
 *   every row mirrored before this version;
 * - `schedules.concurrency_key`: the key a schedule's jobs are enqueued with.
 *
 * Both are nullable without a default: PostgreSQL (11+) then only records
 * the column in the catalog — no table rewrite, no scan, whatever the size
 * of `jobs` — under a brief ACCESS EXCLUSIVE lock. No index: nothing reads
 * jobs by key yet (`GET /jobs` has no `concurrencyKey` filter; the live
 * per-key counts come from Redis), and an index would cost every keyed
 * row's insert and status change an index write in the mirror writer.
 */
export class ConcurrencyKeys1796001600000 implements MigrationInterface {
  name = 'ConcurrencyKeys1796001600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE jobs ADD COLUMN concurrency_key text`);
    await q.query(`ALTER TABLE schedules ADD COLUMN concurrency_key text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE schedules DROP COLUMN IF EXISTS concurrency_key`);
    await q.query(`ALTER TABLE jobs DROP COLUMN IF EXISTS concurrency_key`);
  }
}
