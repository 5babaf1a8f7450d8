import type { DataSource } from 'typeorm';
import { SluiceError } from '../core/errors';
import { DEFAULT_PROJECT } from '../core/project-queue';

/** The organization every installation has (API.md v1.3): today's projects and users are its. */
export const DEFAULT_ORG = DEFAULT_PROJECT;

/** An organization as `GET /orgs` lists it; `createdAt` ISO; `orgRole` only in a user's own list. */
export interface OrgRecord {
  name: string;
  createdAt: string;
  orgRole?: string;
}

/** `POST /orgs` with a name that exists (HTTP 409 `conflict`). */
export class OrgExistsError extends SluiceError {
  constructor(name: string) {
    super('conflict', `organization ${JSON.stringify(name)} already exists`);
  }
}

/**
 * Organizations in PostgreSQL (`orgs`, migration 1796002200000-Organizations):
 * never in Redis, so nothing to restore after a Redis loss. Organizations are
 * never deleted. Without PostgreSQL (a process that has none) only `default` exists.
 */
export class OrgStore {
  constructor(private readonly db: DataSource | null) {}

  /**
   * @throws OrgExistsError (409).
   */
  async create(name: string): Promise<OrgRecord> {
    if (!this.db) throw new OrgExistsError(name);
    const rows: { name: string; created_at: Date }[] = await this.db.query(
      `INSERT INTO orgs (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING name, created_at`,
      [name],
    );
    if (!rows.length) throw new OrgExistsError(name);
    return { name: rows[0].name, createdAt: rows[0].created_at.toISOString() };
  }

  /** Every organization, `default` first, then by name. */
  async list(): Promise<OrgRecord[]> {
    if (!this.db) return [{ name: DEFAULT_ORG, createdAt: new Date(0).toISOString() }];
    const rows: { name: string; created_at: Date }[] = await this.db.query(`SELECT name, created_at FROM orgs ORDER BY name <> 'default', name`);
    return rows.map((r) => ({ name: r.name, createdAt: r.created_at.toISOString() }));
  }

  /** True when the organization exists. */
  async exists(name: string): Promise<boolean> {
    if (!this.db) return name === DEFAULT_ORG;
    const rows: unknown[] = await this.db.query(`SELECT 1 FROM orgs WHERE name = $1`, [name]);
    return rows.length > 0;
  }
}
