import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `job_executions`: one row per execution started, UNIQUE(job_id, execution_seq). */
@Entity({ name: 'job_executions' })
export class JobExecutionEntity {
  @PrimaryColumn('uuid', { name: 'job_id' }) jobId!: string;
  @PrimaryColumn('int', { name: 'execution_seq' }) executionSeq!: number;
  @Column('text') queue!: string;
  @Column('int') attempt!: number;
  @Column('text', { name: 'worker_id', nullable: true }) workerId!: string | null;
  @Column('timestamptz', { name: 'started_at' }) startedAt!: Date;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt!: Date | null;
  /** completed | failed | timeout | stalled | released | cancelled | running */
  @Column('text') outcome!: string;
  @Column('text', { nullable: true }) error!: string | null;
  @Column('int', { name: 'duration_ms', nullable: true }) durationMs!: number | null;
  /** Stream entry id (ms, seq) of the execution's `claimed` event when this row holds it (view `job_timeline`); null when it is a job_events row. */
  @Column('bigint', { name: 'claim_ms', nullable: true }) claimMs!: string | null;
  @Column('bigint', { name: 'claim_seq', nullable: true }) claimSeq!: string | null;
  /** Stream entry id of its `completed` event when this row holds it; `result` is that event's data. */
  @Column('bigint', { name: 'end_ms', nullable: true }) endMs!: string | null;
  @Column('bigint', { name: 'end_seq', nullable: true }) endSeq!: string | null;
  @Column('text', { nullable: true }) result!: string | null;
}
