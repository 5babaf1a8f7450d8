import { hashSecret } from '../core/api-key';
import type { Role } from '../core/access';
import type { SessionRecords } from '../core/ports/sessions';
import { newSessionToken } from '../core/user-credentials';

/** A dashboard session as stored in Redis. Times are ms since the epoch. */
export interface SessionRecord {
  userId: string;
  username: string;
  /** The session's current project (API.md v1.3: switched by `POST /auth/project`) and the user's role there. */
  project: string;
  role: Role;
  /** The member's `hidePayloads` in the current project's organization; absent (sessions from before organizations) = false. */
  hidePayloads?: boolean;
  createdAt: number;
  /** When activity last refreshed the idle expiry (at most every {@link SessionStore.refreshMs}). */
  lastSeenAt: number;
}

/** How long a looked-up session (or its absence) is trusted without asking Redis again, ms: bounds how late a revoke takes effect on another replica. */
export const SESSION_CACHE_MS = 1000;
/** Entries kept in the lookup cache before it is cleared (bounds memory under a flood of random cookies). */
const SESSION_CACHE_MAX = 10_000;
/** Live sessions one user may hold; a login beyond it ends that user's oldest session. */
export const MAX_SESSIONS_PER_USER = 20;
/** Longest interval between two refreshes of a session's idle expiry, ms (no write per request). */
export const SESSION_REFRESH_MAX_MS = 60_000;

/**
 * Dashboard sessions in Redis ({@link SessionRecords}, src/redis/stores/session-records.ts),
 * shared by every api replica:
 * - per session, by the SHA-256 of its token: {@link SessionRecord}
 *   JSON, expiring when the session does. Only the token's SHA-256 is
 *   stored: a copy of Redis logs nobody in;
 * - per user, the set of the hashes of that user's
 *   sessions, so a disable, delete, role or password change ends them all.
 * No MULTI spans two keys (Redis Cluster puts them in different slots): a
 * session is added to its user's set before it is written, so a revoke that
 * reads the set never misses a live session.
 *
 * Expiry: idle after `idleMs` without a refresh, and at `createdAt + maxMs`
 * whatever the activity. A request refreshes the idle expiry at most every
 * {@link refreshMs} (one SET per session per interval, not per request), so a
 * session idles out between `idleMs - refreshMs` and `idleMs` after its last
 * request. A lookup is cached for {@link SESSION_CACHE_MS}: a revoke takes
 * effect at once on this replica, within that time on the others.
 */
export class SessionStore {
  private readonly cache = new Map<string, { rec: SessionRecord | null; at: number }>();
  /** Interval between refreshes of the idle expiry, ms: a quarter of it, at most a minute. */
  readonly refreshMs: number;

  constructor(
    private readonly records: SessionRecords,
    readonly idleMs: number,
    readonly maxMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.refreshMs = Math.min(SESSION_REFRESH_MAX_MS, Math.floor(idleMs / 4));
  }

  /** When the session ends if nothing refreshes it, ms since the epoch. */
  expiresAt(rec: SessionRecord): number {
    return Math.min(rec.lastSeenAt + this.idleMs, rec.createdAt + this.maxMs);
  }

  /**
   * Opens a session (a login): a new token every time.
   * @returns the token (for the cookie only: never stored or logged) and the record.
   * @throws when Redis cannot be reached.
   */
  async create(input: { userId: string; username: string; project: string; role: Role; hidePayloads?: boolean }): Promise<{ token: string; hash: string; record: SessionRecord }> {
    const token = newSessionToken();
    const hash = hashSecret(token);
    const t = this.now();
    const record: SessionRecord = { ...input, createdAt: t, lastSeenAt: t };
    await this.prune(input.userId, MAX_SESSIONS_PER_USER - 1);
    await this.records.addToUser(input.userId, hash, this.maxMs);
    await this.records.put(hash, JSON.stringify(record), Math.min(this.idleMs, this.maxMs));
    this.cache.delete(hash);
    return { token, hash, record };
  }

  /**
   * The live session of a cookie's token, or null (unknown, revoked, idle or
   * past its absolute expiry): synchronous while the lookup is cached, a
   * promise when Redis is asked. Refreshes the idle expiry when due.
   * Rejects only when Redis cannot be reached.
   */
  authenticate(token: string): SessionRecord | null | Promise<SessionRecord | null> {
    const hash = hashSecret(token);
    const t = this.now();
    const hit = this.cache.get(hash);
    // A cached session that looks idle may have been refreshed by another replica: ask Redis then.
    if (hit && t - hit.at < SESSION_CACHE_MS && (!hit.rec || t < hit.rec.lastSeenAt + this.idleMs)) return this.accept(hash, hit.rec, t);
    return this.records.get(hash).then((raw) => {
      const rec = raw ? parseSession(raw) : null;
      if (this.cache.size >= SESSION_CACHE_MAX) this.cache.clear();
      this.cache.set(hash, { rec, at: t });
      return this.accept(hash, rec, this.now());
    });
  }

  private accept(hash: string, rec: SessionRecord | null, t: number): SessionRecord | null {
    if (!rec || t >= this.expiresAt(rec)) return null;
    if (t - rec.lastSeenAt >= this.refreshMs) {
      rec.lastSeenAt = t;
      const ttl = Math.min(this.idleMs, rec.createdAt + this.maxMs - t);
      // XX: a session revoked meanwhile is not brought back.
      if (ttl > 0) void this.records.refresh(hash, JSON.stringify(rec), ttl).catch(() => undefined);
    }
    return rec;
  }

  /**
   * Moves a live session to another project (`POST /auth/project`): the same
   * token, the same expiry, the new project, role and hidePayloads. A session
   * revoked meanwhile is not brought back (the write needs the record to exist).
   * @returns the record as it is now, or null when the session has ended.
   */
  async switchProject(token: string, to: { project: string; role: Role; hidePayloads: boolean }): Promise<SessionRecord | null> {
    const hash = hashSecret(token);
    const raw = await this.records.get(hash);
    const rec = raw ? parseSession(raw) : null;
    const t = this.now();
    if (!rec || t >= this.expiresAt(rec)) return null;
    const next: SessionRecord = { ...rec, project: to.project, role: to.role, hidePayloads: to.hidePayloads, lastSeenAt: t };
    const ttl = Math.min(this.idleMs, rec.createdAt + this.maxMs - t);
    if (ttl <= 0) return null;
    await this.records.refresh(hash, JSON.stringify(next), ttl);
    this.cache.delete(hash);
    const again = await this.records.get(hash);
    return again ? parseSession(again) : null;
  }

  /** Ends the session of this token (logout, or the old cookie of a new login); a no-op when there is none. */
  async destroy(token: string): Promise<void> {
    await this.destroyHash(hashSecret(token));
  }

  /** Ends the session stored under this token hash. */
  async destroyHash(hash: string): Promise<void> {
    const raw = await this.records.get(hash);
    await this.records.delete(hash);
    this.cache.delete(hash);
    const rec = raw ? parseSession(raw) : null;
    if (rec) await this.records.removeFromUser(rec.userId, [hash]);
  }

  /**
   * Ends every session of a user (disabled, deleted, role or password
   * changed): at once on this replica, within {@link SESSION_CACHE_MS} on others.
   * @returns how many sessions were ended.
   */
  async revokeUser(userId: string): Promise<number> {
    const hashes = await this.records.userHashes(userId);
    const ended = await Promise.all(hashes.map((h) => this.records.delete(h)));
    for (const h of hashes) this.cache.delete(h);
    // Only the members read: a session a concurrent login added stays listed.
    if (hashes.length) await this.records.removeFromUser(userId, hashes);
    return ended.reduce((a, b) => a + b, 0);
  }

  /** Drops the user's ended sessions from its set, then its oldest live ones beyond `keep`. */
  private async prune(userId: string, keep: number): Promise<void> {
    const hashes = await this.records.userHashes(userId);
    if (!hashes.length) return;
    const raws = await Promise.all(hashes.map((h) => this.records.get(h)));
    const live: { hash: string; createdAt: number }[] = [];
    const dead: string[] = [];
    hashes.forEach((h, i) => {
      const rec = raws[i] ? parseSession(raws[i] as string) : null;
      if (rec) live.push({ hash: h, createdAt: rec.createdAt });
      else dead.push(h);
    });
    if (dead.length) await this.records.removeFromUser(userId, dead);
    live.sort((a, b) => a.createdAt - b.createdAt);
    for (const s of live.slice(0, Math.max(0, live.length - keep))) await this.destroyHash(s.hash);
  }
}

function parseSession(raw: string): SessionRecord | null {
  try {
    const r = JSON.parse(raw) as SessionRecord;
    return r && typeof r.userId === 'string' && typeof r.role === 'string' && typeof r.project === 'string' && Number.isFinite(r.createdAt) && Number.isFinite(r.lastSeenAt) ? r : null;
  } catch {
    return null;
  }
}
