import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `jobs`: the projection of every job's current state, kept by the audit
 * writer from the events stream. Payload, result and progress are stored as
 * JSON text, byte for byte (jsonb cannot hold every string JSON can, e.g. a
 * lone surrogate escape). Indexes are declared in the migration, each with
 * the query it serves.
 */
@Entity({ name: 'jobs' })
export class JobEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') queue!: string;
  @Column('text') type!: string;
  @Column('text') status!: string;
  @Column('int') priority!: number;
  @Column('int') attempts!: number;
  @Column('int', { name: 'max_attempts' }) maxAttempts!: number;
  @Column('text') backoff!: string;
  @Column('int', { name: 'timeout_ms' }) timeoutMs!: number;
  @Column('text', { name: 'idempotency_key', nullable: true }) idempotencyKey!: string | null;
  /** The job's concurrency key, from its `enqueued` event (migration 1796001600000-ConcurrencyKeys); null when none. */
  @Column('text', { name: 'concurrency_key', nullable: true }) concurrencyKey!: string | null;
  /** A flow job's flow, its ref in it and its policy (`cancel` | `run`), from its `enqueued` event (migration 1796001700000-Workflows); null outside flows. */
  @Column('uuid', { name: 'flow_id', nullable: true }) flowId!: string | null;
  @Column('text', { name: 'flow_ref', nullable: true }) flowRef!: string | null;
  @Column('text', { name: 'on_dependency_failure', nullable: true }) onDependencyFailure!: string | null;
  @Column('text') payload!: string;
  @Column('text', { nullable: true }) progress!: string | null;
  @Column('text', { nullable: true }) result!: string | null;
  @Column('text', { name: 'last_error', nullable: true }) lastError!: string | null;
  @Column('text', { name: 'worker_id', nullable: true }) workerId!: string | null;
  @Column('int', { name: 'execution_seq' }) executionSeq!: number;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'run_at' }) runAt!: Date;
  @Column('timestamptz', { name: 'started_at', nullable: true }) startedAt!: Date | null;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt!: Date | null;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
  /** Stream position (ms, seq) of the newest event applied: older events never overwrite. */
  @Column('bigint', { name: 'last_event_ms' }) lastEventMs!: string;
  @Column('bigint', { name: 'last_event_seq' }) lastEventSeq!: string;
}

