import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `job_logs`: lines a handler wrote with ctx.log(), keyed by their stream entry id. */
@Entity({ name: 'job_logs' })
export class JobLogEntity {
  @Column('text') queue!: string;
  @PrimaryColumn('uuid', { name: 'job_id' }) jobId!: string;
  @PrimaryColumn('bigint', { name: 'stream_ms' }) streamMs!: string;
  @PrimaryColumn('bigint', { name: 'stream_seq' }) streamSeq!: string;
  @Column('timestamptz') at!: Date;
  @Column('int') attempt!: number;
  @Column('text') level!: string;
  @Column('text') message!: string;
}
