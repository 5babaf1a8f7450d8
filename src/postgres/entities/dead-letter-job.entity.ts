import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `dead_letter_jobs`: a copy of every job in the dead-letter queue (payload and
 * last error), so it survives retention pruning of the job itself. Removed by
 * a DLQ retry or purge; the audit rows stay.
 */
@Entity({ name: 'dead_letter_jobs' })
export class DeadLetterJobEntity {
  @PrimaryColumn('uuid', { name: 'job_id' }) jobId!: string;
  @Column('text') queue!: string;
  @Column('text') type!: string;
  @Column('text') payload!: string;
  @Column('text', { name: 'last_error', nullable: true }) lastError!: string | null;
  @Column('int') attempts!: number;
  @Column('timestamptz', { name: 'failed_at' }) failedAt!: Date;
  /** errorFingerprint(last_error) (src/core/error-fingerprint.ts), set when the job entered the DLQ. */
  @Column('text', { nullable: true }) fingerprint!: string | null;
}
