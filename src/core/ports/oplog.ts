/**
 * One buffered operator-log entry: its buffer id and its field/value list
 * (field `r` holds the record, JSON text), null when the entry was deleted
 * meanwhile. Raw, so an entry that is no record can be quarantined as it is.
 */
export type OplogEntry = [id: string, fields: string[] | null];

/** A consumer of the buffer's group as {@link OplogBuffer.consumers} reports it. */
export interface OplogConsumer {
  name: string;
  /** Entries handed to it and not removed yet. */
  pending: number;
  /** Since its last read or claim, ms. */
  idleMs: number;
}

/**
 * The buffer (consumer group) is gone, typically because the store lost its
 * data: {@link OplogBuffer.ensureGroup} must run again.
 */
export class OplogBufferGoneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OplogBufferGoneError';
  }
}

/**
 * The shared buffer of operator-log records (src/oplog) between the API's
 * onResponse hook, which appends, and the flushers of every api replica,
 * which move it into PostgreSQL: an append-only log read through a consumer
 * group (each entry is handed to one consumer; an entry stays pending for it
 * until removed; an abandoned one can be claimed by another consumer).
 * Records are the feature's JSON text. Times in ms.
 * Implemented by `src/redis/stores/oplog-buffer.ts` (a stream; lua/recordAction-2.lua).
 */
export abstract class OplogBuffer {
  /** The buffer's name as recorded in the quarantine table (`audit_quarantine.stream_key`). */
  abstract readonly name: string;
  /**
   * Appends one record unless the buffer already holds `max` (atomic).
   * @returns true when appended; false when full: the record is dropped and the drop counter incremented.
   */
  abstract append(record: string, max: number): Promise<boolean>;
  /** Makes the consumer group (reading from the first entry), creating the buffer if needed; an existing group is kept. */
  abstract ensureGroup(group: string): Promise<void>;
  /**
   * Up to `count` entries of `consumer`: those it was handed and has not removed (`pending`) or new ones (`new`).
   * @throws OplogBufferGoneError when the group (or the buffer) does not exist.
   */
  abstract read(group: string, consumer: string, from: 'pending' | 'new', count: number): Promise<OplogEntry[]>;
  /**
   * Takes over up to `count` entries other consumers have held for at least `minIdleMs`.
   * @throws OplogBufferGoneError when the group (or the buffer) does not exist.
   */
  abstract claimIdle(group: string, consumer: string, minIdleMs: number, count: number): Promise<OplogEntry[]>;
  /** Acknowledges and deletes entries, in one atomic step (so the buffer's length is what is not written yet). */
  abstract remove(group: string, ids: string[]): Promise<void>;
  /** The group's consumers. */
  abstract consumers(group: string): Promise<OplogConsumer[]>;
  /** Removes a consumer from the group. */
  abstract deleteConsumer(group: string, name: string): Promise<void>;
  /** Records in the buffer (not yet written) and records dropped because it was full (all replicas). */
  abstract state(): Promise<{ buffered: number; dropped: number }>;
}
