import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `job_events`: the append-only audit trail, one row per stream entry.
 * The primary key (job_id, stream_ms, stream_seq) is the stream entry id
 * (a job's entries are all in its queue's stream) with the partition key
 * first (src/postgres/partitions.ts), which makes the writer idempotent: a
 * batch written twice inserts nothing twice.
 */
@Entity({ name: 'job_events' })
export class JobEventEntity {
  @Column('text') queue!: string;
  @PrimaryColumn('uuid', { name: 'job_id' }) jobId!: string;
  @PrimaryColumn('bigint', { name: 'stream_ms' }) streamMs!: string;
  @PrimaryColumn('bigint', { name: 'stream_seq' }) streamSeq!: string;
  @Column('timestamptz') at!: Date;
  @Column('text') event!: string;
  @Column('text', { name: 'from_status', nullable: true }) fromStatus!: string | null;
  @Column('text', { name: 'to_status', nullable: true }) toStatus!: string | null;
  @Column('int', { nullable: true }) attempt!: number | null;
  @Column('int', { name: 'execution_seq', nullable: true }) executionSeq!: number | null;
  @Column('text', { name: 'worker_id', nullable: true }) workerId!: string | null;
  @Column('text', { nullable: true }) reason!: string | null;
  @Column('text', { nullable: true }) error!: string | null;
  @Column('text', { nullable: true }) data!: string | null;
}
