import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `schedules`: cron schedules (API.md "Schedules (cron)"). Written by the API
 * role; read and advanced by the scheduler role (src/schedules).
 * The slot bookkeeping columns make each (schedule, slot) fire at most once
 * across scheduler replicas: `last_slot` only ever grows (compare-and-set),
 * `claim_until` is the lease of a claimed slot not yet confirmed enqueued.
 */
@Entity({ name: 'schedules' })
export class ScheduleEntity {
  @PrimaryColumn('uuid') id!: string;
  /** The project it belongs to; `name` is unique per project (migration 1796001500000-Projects). */
  @Column('text', { default: 'default' }) project!: string;
  @Column('text') name!: string;
  @Column('text') cron!: string;
  @Column('text') timezone!: string;
  /** The qualified queue name (src/core/project-queue.ts) the slots enqueue into. */
  @Column('text') queue!: string;
  @Column('text') type!: string;
  @Column('jsonb') payload!: Record<string, unknown>;
  @Column('int') priority!: number;
  @Column('int', { name: 'max_attempts', nullable: true }) maxAttempts!: number | null;
  /** BackoffSpec as sent (defaults filled), or null for the queue's/process's. */
  @Column('jsonb', { nullable: true }) backoff!: Record<string, unknown> | null;
  @Column('int', { name: 'timeout_ms', nullable: true }) timeoutMs!: number | null;
  /** The concurrency key of the jobs it enqueues; null = none (migration 1796001600000-ConcurrencyKeys). */
  @Column('text', { name: 'concurrency_key', nullable: true }) concurrencyKey!: string | null;
  @Column('boolean') enabled!: boolean;
  /** The next slot to fire; null while disabled. */
  @Column('timestamptz', { name: 'next_run_at', nullable: true }) nextRunAt!: Date | null;
  /** When the scheduler last enqueued a job for this schedule. */
  @Column('timestamptz', { name: 'last_run_at', nullable: true }) lastRunAt!: Date | null;
  /** The newest slot claimed by a scheduler (fired, or being fired). */
  @Column('timestamptz', { name: 'last_slot', nullable: true }) lastSlot!: Date | null;
  @Column('timestamptz', { name: 'claim_until', nullable: true }) claimUntil!: Date | null;
  @Column('text', { name: 'last_job_id', nullable: true }) lastJobId!: string | null;
  /** Bumped by every change of the definition, so a scheduler with a stale copy cannot fire it. */
  @Column('int') revision!: number;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}
