import { v7 as uuidv7 } from 'uuid';
import type { DataSource } from 'typeorm';
import { hashSecret, newSecret } from '../core/api-key';
import type { Role } from '../core/access';
import type { ApiKeyStore } from '../core/ports/api-keys';
import type { RateLimit } from './key-rate-limiter';

/** An API key as stored (never its secret). Times are ISO strings; `expiresAt` null = never. */
export interface KeyRecord {
  id: string;
  name: string;
  role: Role;
  project: string;
  /** Root keys are `admin` of every project (the bootstrap key). */
  root: boolean;
  createdAt: string;
  expiresAt: string | null;
  /** This key's own token bucket (overrides KEY_RATE_LIMIT_*); null = the defaults. */
  rateLimit: RateLimit | null;
}

/** A key as listed by `GET /keys`: the record plus when it was last used (≤ ~5 s stale). */
export interface KeyView extends KeyRecord {
  lastUsedAt: string | null;
}

/** How long a looked-up key (or its absence) is trusted without asking Redis again, ms. Bounds how late a revoke takes effect. */
export const KEY_CACHE_MS = 1000;
/** Entries kept in the lookup cache before it is cleared (bounds memory under a flood of random keys). */
const KEY_CACHE_MAX = 10_000;
/** How often last-used times are flushed to Redis (one HSET for all keys used meanwhile), ms. */
export const LAST_USED_FLUSH_MS = 5000;

/**
 * API keys (API.md v1.1 "Projects, API keys, roles").
 *
 * Redis is the lookup path ({@link ApiKeyStore}, src/redis/stores/api-key-store.ts),
 * so authenticating a request never touches PostgreSQL (the api role stays up on Redis alone):
 * - SHA-256 of the secret (hex) → KeyRecord JSON;
 * - key id → SHA-256 (revoke and list by id);
 * - key id → last use (ms), flushed every
 *   {@link LAST_USED_FLUSH_MS} from memory: no write per request.
 * PostgreSQL (`api_keys`) holds a copy of every key, written before Redis on
 * create and after it on revoke, from which {@link reconcile} restores Redis
 * (after Redis lost its data) and removes keys revoked elsewhere.
 *
 * A lookup is cached in the process for {@link KEY_CACHE_MS}: a revoke on
 * another replica takes effect there within that time; on this replica at once.
 * A secret is looked up by its SHA-256, never compared as itself: how long a
 * lookup takes tells an attacker nothing about any stored secret (they would
 * need a preimage of the hash).
 */
export class KeyStore {
  private readonly cache = new Map<string, { rec: KeyRecord | null; at: number }>();
  private readonly lastUsed = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: ApiKeyStore,
    private readonly db: DataSource | null,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts the periodic last-used flush. */
  start(): void {
    if (this.flushTimer) return;
    this.flushTimer = setInterval(() => void this.flushLastUsed().catch(() => undefined), LAST_USED_FLUSH_MS);
    this.flushTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer);
    this.flushTimer = null;
    await this.flushLastUsed().catch(() => undefined);
  }

  /**
   * The live key whose secret this is, or null (unknown, revoked or expired);
   * synchronous while the lookup is cached, a promise when Redis is asked.
   * Records the use (in memory). Rejects only when Redis cannot be reached.
   */
  authenticate(secret: string): KeyRecord | null | Promise<KeyRecord | null> {
    const hash = hashSecret(secret);
    const t = this.now();
    const hit = this.cache.get(hash);
    // The common case answers synchronously: no promise, no Redis round trip.
    if (hit && t - hit.at < KEY_CACHE_MS) return this.accept(hit.rec, t);
    return this.store.findByHash(hash).then((raw) => {
      const rec = raw ? parseRecord(raw) : null;
      if (this.cache.size >= KEY_CACHE_MAX) this.cache.clear();
      this.cache.set(hash, { rec, at: t });
      return this.accept(rec, this.now());
    });
  }

  /** Drops what this process cached of the key with this secret (the next lookup asks Redis). */
  forget(secret: string): void {
    this.cache.delete(hashSecret(secret));
  }

  private accept(rec: KeyRecord | null, t: number): KeyRecord | null {
    if (!rec) return null;
    if (rec.expiresAt !== null && Date.parse(rec.expiresAt) <= t) return null;
    this.lastUsed.set(rec.id, t);
    return rec;
  }

  /**
   * Creates a key and returns it with its secret (shown this once).
   * @throws when PostgreSQL or Redis cannot be reached (nothing usable is left behind:
   *   a row without its Redis entry authenticates nothing and is restored or revoked later).
   */
  async create(input: { name: string; role: Role; project: string; root?: boolean; expiresAt?: string | null; rateLimit?: RateLimit | null; secret?: string }): Promise<KeyRecord & { secret: string }> {
    const secret = input.secret ?? newSecret();
    const rec: KeyRecord = {
      id: uuidv7(),
      name: input.name,
      role: input.role,
      project: input.project,
      root: input.root ?? false,
      createdAt: new Date(this.now()).toISOString(),
      expiresAt: input.expiresAt ?? null,
      rateLimit: input.rateLimit ?? null,
    };
    const hash = hashSecret(secret);
    if (this.db) {
      await this.db.query(
        `INSERT INTO api_keys (id, project, name, role, root, secret_sha256, created_at, expires_at, rate_limit) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [rec.id, rec.project, rec.name, rec.role, rec.root, hash, rec.createdAt, rec.expiresAt, rec.rateLimit ? JSON.stringify(rec.rateLimit) : null],
      );
    }
    await this.store.add(hash, rec.id, JSON.stringify(rec));
    this.cache.delete(hash);
    return { ...rec, secret };
  }

  /**
   * Ensures a root key with this secret exists (SLUICE_BOOTSTRAP_ADMIN_KEY).
   * A bootstrap key revoked earlier stays revoked (a restart does not bring it back).
   * @returns 'created' | 'exists' | 'revoked'
   */
  async ensureBootstrap(secret: string): Promise<'created' | 'exists' | 'revoked'> {
    const hash = hashSecret(secret);
    if (await this.store.hasHash(hash)) return 'exists';
    if (this.db) {
      const rows: { revoked: boolean }[] = await this.db.query(`SELECT revoked_at IS NOT NULL AS revoked FROM api_keys WHERE secret_sha256 = $1`, [hash]);
      if (rows.length && rows[0].revoked) return 'revoked';
      if (rows.length) {
        await this.reconcile();
        return 'exists';
      }
    }
    await this.create({ name: 'bootstrap', role: 'admin', project: 'default', root: true, secret });
    return 'created';
  }

  /**
   * Keys of a project (every project's for `project` null), oldest first, without secrets.
   * @param opts.root false: root keys are left out (they are root's, not the project's: API.md v1.2).
   */
  async list(project: string | null, opts: { root: boolean } = { root: true }): Promise<KeyView[]> {
    const [all, used] = await Promise.all([this.store.allRecords(), this.store.lastUsed()]);
    const out: KeyView[] = [];
    for (const raw of all) {
      const rec = parseRecord(raw);
      if (!rec || (project !== null && rec.project !== project) || (rec.root && !opts.root)) continue;
      const mem = this.lastUsed.get(rec.id);
      const ms = mem ?? (used[rec.id] ? Number(used[rec.id]) : NaN);
      out.push({ ...rec, lastUsedAt: Number.isFinite(ms) ? new Date(ms).toISOString() : null });
    }
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * The key with this id if it belongs to `project` (any project for null).
   * @param opts.root false: a root key is not found (only root manages root keys).
   */
  async get(id: string, project: string | null, opts: { root: boolean } = { root: true }): Promise<KeyRecord | null> {
    const hash = await this.store.hashOf(id);
    if (!hash) return null;
    const raw = await this.store.findByHash(hash);
    const rec = raw ? parseRecord(raw) : null;
    if (!rec || (project !== null && rec.project !== project) || (rec.root && !opts.root)) return null;
    return rec;
  }

  /**
   * Revokes a key: effective at once on this replica, within {@link KEY_CACHE_MS} on others.
   * @param opts.root false: a root key is not found (only root revokes root keys).
   * @returns the revoked record, or null when no such key (in that project) is live.
   */
  async revoke(id: string, project: string | null, opts: { root: boolean } = { root: true }): Promise<KeyRecord | null> {
    const rec = await this.get(id, project, opts);
    if (!rec) return null;
    const hash = (await this.store.hashOf(id)) as string;
    await this.store.remove(hash, id);
    this.cache.delete(hash);
    if (this.db) await this.db.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [id]);
    return rec;
  }

  /**
   * Makes Redis agree with PostgreSQL: live keys missing from Redis (Redis lost
   * its data) are restored, keys revoked in PostgreSQL are removed.
   * @returns how many keys were restored and removed.
   */
  async reconcile(): Promise<{ restored: number; removed: number }> {
    if (!this.db) return { restored: 0, removed: 0 };
    const rows: { id: string; project: string; name: string; role: Role; root: boolean; secret_sha256: string; created_at: Date; expires_at: Date | null; revoked_at: Date | null; rate_limit: RateLimit | null }[] =
      await this.db.query(`SELECT id, project, name, role, root, secret_sha256, created_at, expires_at, revoked_at, rate_limit FROM api_keys`);
    let restored = 0;
    let removed = 0;
    for (const r of rows) {
      if (r.revoked_at) {
        removed += Number(await this.store.removeRevoked(r.secret_sha256, r.id));
        continue;
      }
      const rec: KeyRecord = { id: r.id, name: r.name, role: r.role, project: r.project, root: r.root, createdAt: r.created_at.toISOString(), expiresAt: r.expires_at ? r.expires_at.toISOString() : null, rateLimit: r.rate_limit ?? null };
      if (await this.store.restore(r.secret_sha256, r.id, JSON.stringify(rec))) restored++;
    }
    return { restored, removed };
  }

  /** Writes the last-used times gathered since the previous flush (one HSET). */
  async flushLastUsed(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const times = [...this.lastUsed];
    this.lastUsed.clear();
    await this.store.recordLastUsed(times);
  }
}

function parseRecord(raw: string): KeyRecord | null {
  try {
    const r = JSON.parse(raw) as KeyRecord;
    // A record stored before keys had their own limit has no `rateLimit`: every answer names it (null = the defaults).
    return r && typeof r.id === 'string' && typeof r.role === 'string' ? { ...r, rateLimit: r.rateLimit ?? null } : null;
  } catch {
    return null;
  }
}
