/**
 * Storage of dashboard sessions (src/auth/session-store.ts): one record per
 * session by the SHA-256 of its token, expiring with the session, and per user
 * the set of its session hashes. The record is the feature's JSON text (a
 * SessionRecord): stored as it is. No method spans a record and a user's set
 * atomically (they may live on different cluster shards); the feature orders
 * its calls instead. Times and TTLs in ms.
 * Implemented by `src/redis/stores/session-records.ts`.
 */
export abstract class SessionRecords {
  /** The record of this token hash, or null (unknown or expired). Rejects only when the store cannot be reached. */
  abstract get(hash: string): Promise<string | null>;
  /** Writes the record, expiring in `ttlMs`. */
  abstract put(hash: string, record: string, ttlMs: number): Promise<void>;
  /** Rewrites the record with a new expiry only if it still exists (a revoked session is not brought back). */
  abstract refresh(hash: string, record: string, ttlMs: number): Promise<void>;
  /** Deletes the record. @returns 1 when it existed, else 0. */
  abstract delete(hash: string): Promise<number>;
  /** Adds a session hash to its user's set, then sets the set's expiry to `ttlMs` (two steps). */
  abstract addToUser(userId: string, hash: string, ttlMs: number): Promise<void>;
  /** The session hashes listed for a user. */
  abstract userHashes(userId: string): Promise<string[]>;
  /** Removes these hashes from a user's set (`hashes` must not be empty). */
  abstract removeFromUser(userId: string, hashes: string[]): Promise<void>;
}
