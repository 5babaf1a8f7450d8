import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `job_dependencies.queue`: the queue of each edge's dependency, as the flow
 * job's `enqueued` event names it (stream field dp, `[{ref, id, queue}]`).
 * Until now only the dependency's own `jobs` row said where it lived, so a
 * dependency PostgreSQL never heard of — lost with Redis before the mirror
 * wrote it, while its dependents had been written — could not be looked for
 * in Redis by the restore, and its dependents came back with a `dp` naming
 * their own queue for it (docs/workflows.md "PostgreSQL, restore, Redis
 * loss"). Nullable without a default: PostgreSQL only records it in the
 * catalog (no rewrite of the partitions); edges mirrored before this version
 * read null (the restore then looks in the flow's other queues).
 */
export class DependencyQueues1796002050000 implements MigrationInterface {
  name = 'DependencyQueues1796002050000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE job_dependencies ADD COLUMN queue text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE job_dependencies DROP COLUMN IF EXISTS queue`);
  }
}
