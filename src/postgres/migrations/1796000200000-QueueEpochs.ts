import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `queues`: one row per queue the audit role has seen, with the epoch of the
 * queue's Redis state. Redis holds the same value in `<prefix>:{<queue>}:epoch`;
 * a queue PostgreSQL knows whose Redis marker is missing has lost its Redis
 * data and is rebuilt from PostgreSQL (src/restore/restore.ts).
 */
export class QueueEpochs1796000200000 implements MigrationInterface {
  name = 'QueueEpochs1796000200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE queues (
        name text PRIMARY KEY,
        epoch text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        restored_at timestamptz,
        restores int NOT NULL DEFAULT 0
      )`);
    // (the primary key serves the restore check's lookups by name)
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS queues`);
  }
}
