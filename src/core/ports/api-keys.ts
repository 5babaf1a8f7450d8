/**
 * The lookup path of API keys (src/auth/key-store.ts): records by the SHA-256
 * of their secret, the hash by key id, and last-use times. The record is the
 * feature's JSON text (a KeyRecord): the store keeps it as it is and never
 * reads it. PostgreSQL's `api_keys` is the durable copy (not this port's).
 * Implemented by `src/redis/stores/api-key-store.ts`.
 */
export abstract class ApiKeyStore {
  /** The record stored under this secret hash, or null. Rejects only when the store cannot be reached. */
  abstract findByHash(hash: string): Promise<string | null>;
  /** True when a record is stored under this secret hash. */
  abstract hasHash(hash: string): Promise<boolean>;
  /** The secret hash of the key with this id, or null. */
  abstract hashOf(id: string): Promise<string | null>;
  /** Every stored record (JSON text), in no order. */
  abstract allRecords(): Promise<string[]>;
  /** Stores a key: record by hash and hash by id, in one atomic step (MULTI). */
  abstract add(hash: string, id: string, record: string): Promise<void>;
  /** Removes a key: record, id and last-use time, in one atomic step (MULTI). */
  abstract remove(hash: string, id: string): Promise<void>;
  /**
   * Reconcile step for a key revoked in PostgreSQL: removes its record, then its id (two steps).
   * @returns true when a record was removed.
   */
  abstract removeRevoked(hash: string, id: string): Promise<boolean>;
  /**
   * Reconcile step for a live key: stores the record only if none is stored under
   * the hash, then (only then) its id (two steps).
   * @returns true when it was restored.
   */
  abstract restore(hash: string, id: string, record: string): Promise<boolean>;
  /** Last-use times by key id, epoch ms (as flushed by {@link recordLastUsed}). */
  abstract lastUsed(): Promise<Record<string, number>>;
  /** Writes last-use times (key id → epoch ms) in one command; `times` must not be empty. */
  abstract recordLastUsed(times: Iterable<[id: string, ms: number]>): Promise<void>;
}
