import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Projects (tenants; docs/security.md, "Projects"):
 * - `projects (name, created_at)`: the durable copy of the projects registry
 *   (Redis `<prefix>:projects` is the lookup path, restored from here);
 *   `default` always exists and is inserted here.
 * - `schedules.project`: a schedule's name is unique per project, so the
 *   column exists for the (project, name) unique index and GET /schedules;
 *   existing rows become `default`'s (DEFAULT 'default'). The schedule's
 *   `queue` holds the qualified queue name (src/core/project-queue.ts), like
 *   every other `queue` column: the `default` project's are the bare names
 *   of today, so no other table changes and no row moves.
 */
export class Projects1796001500000 implements MigrationInterface {
  name = 'Projects1796001500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE projects (name text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`INSERT INTO projects (name) VALUES ('default')`);
    await q.query(`ALTER TABLE schedules ADD COLUMN project text NOT NULL DEFAULT 'default'`);
    await q.query(`ALTER TABLE schedules DROP CONSTRAINT IF EXISTS schedules_name_key`);
    await q.query(`CREATE UNIQUE INDEX schedules_project_name ON schedules (project, name)`);
    // GET /schedules lists one project's, by creation.
    await q.query(`DROP INDEX IF EXISTS schedules_created`);
    await q.query(`CREATE INDEX schedules_project_created ON schedules (project, created_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS schedules_project_created`);
    await q.query(`CREATE INDEX IF NOT EXISTS schedules_created ON schedules (created_at, id)`);
    await q.query(`DROP INDEX IF EXISTS schedules_project_name`);
    await q.query(`DELETE FROM schedules WHERE project <> 'default'`);
    await q.query(`ALTER TABLE schedules ADD CONSTRAINT schedules_name_key UNIQUE (name)`);
    await q.query(`ALTER TABLE schedules DROP COLUMN project`);
    await q.query(`DROP TABLE IF EXISTS projects`);
  }
}
