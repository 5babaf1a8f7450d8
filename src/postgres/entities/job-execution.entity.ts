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
}
