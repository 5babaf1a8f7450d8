import type { DataSource } from 'typeorm';
import { SluiceError } from '../core/errors';
import type { ProjectRegistry } from '../core/ports/projects';
import { DEFAULT_PROJECT } from '../core/project-queue';

/** A project as `GET /projects` lists it; `createdAt` ISO; `org` the organization holding it (API.md v1.3). */
export interface ProjectRecord {
  name: string;
  org: string;
  createdAt: string;
}

/** `POST /projects` naming an organization that does not exist (HTTP 404 `not_found`). */
export class ProjectOrgNotFoundError extends SluiceError {
  constructor(org: string) {
    super('not_found', `organization ${JSON.stringify(org.slice(0, 64))} not found`);
  }
}

/** `POST /projects` with a name that exists (HTTP 409 `conflict`). */
export class ProjectExistsError extends SluiceError {
  constructor(name: string) {
    super('conflict', `project ${JSON.stringify(name)} already exists`);
  }
}

/**
 * The projects registry (API.md v1.1 "Projects, API keys, roles").
 *
 * Redis is the lookup path (the guard asks it for a root key's
 * `X-Sluice-Project`): {@link ProjectRegistry} maps a name to its
 * creation time (ms). PostgreSQL's `projects` table is the durable copy,
 * written first on create; {@link reconcile} restores Redis from it (after
 * Redis lost its data). `default` always exists, in neither store necessarily.
 *
 * Projects are never deleted, so a name found once is cached for the life
 * of the process: the guard's check costs no Redis call after the first.
 */
export class ProjectStore {
  private readonly known = new Set<string>([DEFAULT_PROJECT]);

  constructor(
    private readonly registry: ProjectRegistry,
    private readonly db: DataSource | null,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * True when the project exists; synchronous once it has been seen, else one HEXISTS.
   * Rejects only when Redis cannot be reached.
   */
  exists(name: string): boolean | Promise<boolean> {
    if (this.known.has(name)) return true;
    return this.registry.exists(name).then((found) => {
      if (found) this.known.add(name);
      return found;
    });
  }

  /**
   * Creates a project in organization `org` (default `default`).
   * @throws ProjectExistsError (409) when it exists; ProjectOrgNotFoundError (404) for an unknown
   *   organization; the client's error when a store is unreachable.
   */
  async create(name: string, org: string = DEFAULT_PROJECT): Promise<ProjectRecord> {
    if (name === DEFAULT_PROJECT) throw new ProjectExistsError(name);
    if (!this.db && org !== DEFAULT_PROJECT) throw new ProjectOrgNotFoundError(org);
    const at = this.now();
    if (this.db) {
      const orgFound: unknown[] = await this.db.query(`SELECT 1 FROM orgs WHERE name = $1`, [org]);
      if (!orgFound.length) throw new ProjectOrgNotFoundError(org);
      const rows: unknown[] = await this.db.query(`INSERT INTO projects (name, created_at, org) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING RETURNING name`, [name, new Date(at), org]);
      if (!rows.length) {
        // Known to PostgreSQL: make sure Redis knows it too (it may have lost it), then refuse.
        await this.reconcile().catch(() => undefined);
        throw new ProjectExistsError(name);
      }
      await this.registry.put(name, at);
    } else if (!(await this.registry.putIfAbsent(name, at))) {
      throw new ProjectExistsError(name);
    }
    this.known.add(name);
    return { name, org, createdAt: new Date(at).toISOString() };
  }

  /** Every project, `default` first, then by name; `org` from PostgreSQL (`default` without it). */
  async list(): Promise<ProjectRecord[]> {
    const all = await this.registry.all();
    const orgOf = new Map<string, string>();
    if (this.db) {
      const rows: { name: string; org: string }[] = await this.db.query(`SELECT name, org FROM projects`);
      for (const r of rows) orgOf.set(r.name, r.org);
    }
    const out: ProjectRecord[] = Object.entries(all)
      .filter(([name]) => name !== DEFAULT_PROJECT)
      .map(([name, ms]) => ({ name, org: orgOf.get(name) ?? DEFAULT_PROJECT, createdAt: new Date(Number(ms) || 0).toISOString() }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const dflt = all[DEFAULT_PROJECT] ?? (await this.defaultCreatedAt());
    return [{ name: DEFAULT_PROJECT, org: DEFAULT_PROJECT, createdAt: new Date(Number(dflt) || 0).toISOString() }, ...out];
  }

  /**
   * Copies PostgreSQL's projects into Redis (those Redis lacks).
   * @returns how many were restored.
   */
  async reconcile(): Promise<number> {
    if (!this.db) return 0;
    const rows: { name: string; ms: number }[] = await this.db.query(`SELECT name, (extract(epoch FROM created_at) * 1000)::float8 AS ms FROM projects`);
    let restored = 0;
    for (const r of rows) if (await this.registry.putIfAbsent(r.name, Math.round(r.ms))) restored++;
    return restored;
  }

  /** When `default` was created: the migration's row; now when there is no database. */
  private async defaultCreatedAt(): Promise<number> {
    const at = this.now();
    await this.registry.putIfAbsent(DEFAULT_PROJECT, at);
    return (await this.registry.createdAt(DEFAULT_PROJECT)) ?? at;
  }
}
