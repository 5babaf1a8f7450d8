/** One entry of a queue's transition stream, as stored: its id and its field/value list. */
export interface RawStreamEntry {
  /** Stream entry id `<ms>-<seq>` (the store's clock). */
  id: string;
  /** Field, value, field, value, … (see the header contract of lua/includes/events.lua). */
  fields: string[];
}

/** Size and age of the outbox: transitions the mirror has not written to PostgreSQL yet. */
export interface BacklogState {
  /** Entries waiting in every queue's stream. */
  pending: number;
  /** Age of the oldest waiting entry, ms (0 when none; the store's clock). */
  lagMs: number;
}

/**
 * Which process mirrors (or restores) a queue's stream: a lease per queue
 * with an owner id, taken only when free, renewed and released only by its
 * owner. A restore holds it too, so no writer mirrors a queue while it is
 * rebuilt. Implemented by `src/redis/stores/mirror-stream.ts`.
 */
export abstract class QueueOwnership {
  /** Takes the lease when nobody holds it. @returns true when taken. */
  abstract take(queue: string, owner: string, ttlMs: number): Promise<boolean>;
  /** @returns false when the lease is gone or held by someone else (nothing changed). */
  abstract renew(queue: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Releases the lease if `owner` still holds it. Never throws. */
  abstract release(queue: string, owner: string): Promise<void>;
  /** @returns the owner id, or null when free. */
  abstract holder(queue: string): Promise<string | null>;
  /** Says that a writer runs, for `ttlMs` (every ownership round renews it). */
  abstract markRunning(owner: string, ttlMs: number): Promise<void>;
}

/**
 * The outbox side of the history mirror: each queue's transition stream,
 * read through one consumer group, acknowledged once written to PostgreSQL.
 * Implemented by `src/redis/stores/mirror-stream.ts`.
 */
export abstract class MirrorStream {
  /** Creates the queue's consumer group if missing (Redis may have lost it). */
  abstract ensureGroup(queue: string): Promise<void>;
  /** Up to `count` entries never delivered before, for `consumer`, oldest first. */
  abstract readNew(queue: string, consumer: string, count: number): Promise<RawStreamEntry[]>;
  /**
   * The idle writer's wait: until any of `queues` gets an entry after what
   * its last `readNew` found (when that found nothing new), at most
   * `timeoutMs`, or until `signal` aborts. Never throws.
   * @returns true when something arrived or may have (read again); false on timeout, abort or trouble.
   */
  abstract waitNew(queues: string[], timeoutMs: number, signal: AbortSignal): Promise<boolean>;
  /** Releases what waitNew holds (its connection). */
  abstract closeWait(): void;
  /**
   * Takes over entries left pending by earlier consumers (or by `consumer`
   * itself), 1,000 per call from `cursor` (start with '0-0'); done when the
   * returned cursor is '0-0'. Only entries pending for at least `minIdleMs`
   * (default 0: all).
   */
  abstract claimPending(queue: string, consumer: string, cursor: string, minIdleMs?: number): Promise<{ cursor: string; entries: RawStreamEntry[] }>;
  /** The stored bytes of entries still in the stream (for the quarantine); a missing entry → null. */
  abstract rawEntries(queue: string, ids: string[]): Promise<(Buffer[] | null)[]>;
  /**
   * Acknowledges written entries and removes them from the stream in one
   * atomic step (lua/ackEvents-1.lua).
   * @param ids 1..1000 entry ids, in any order.
   * @returns 1 when trimmed, 0 when deleted one by one.
   */
  abstract ack(queue: string, ids: string[]): Promise<number>;
  /** Drops finished jobs from the hot store once mirrored, keeping `keepCount` / `keepMs` of them (-1: none). */
  abstract forgetFinished(queue: string, jobIds: string[], keepCount: number, keepMs: number): Promise<void>;
  /** The stream's name as recorded in the quarantine table (`audit_quarantine.stream_key`). */
  abstract streamName(queue: string): string;
  /** Calls `fn` when a new queue is registered; returns the unsubscribe function. */
  abstract onNewQueue(fn: (queue: string) => void): () => void;
  /** The backlog of `queues` (one length and one oldest-entry read each). */
  abstract backlog(queues: string[]): Promise<BacklogState>;
  /** The newest entry id of a queue's stream and whether a writer owns the queue; null id when empty. */
  abstract tail(queue: string): Promise<{ lastId: string | null; owned: boolean }>;
  /** Whether any mirror writer runs (one takes a queue nobody holds within an ownership round, ≤ 1 s; at once when it is new). */
  abstract writersRunning(): Promise<boolean>;
  /** The oldest entry id still in the stream (not yet mirrored), or null. */
  abstract oldestId(queue: string): Promise<string | null>;
}
