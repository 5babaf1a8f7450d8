import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** `job_logs`: lines a handler wrote with ctx.log(), unique per stream entry. */
@Entity({ name: 'job_logs' })
export class JobLogEntity {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' }) id!: string;
  @Column('text') queue!: string;
  @Column('bigint', { name: 'stream_ms' }) streamMs!: string;
  @Column('bigint', { name: 'stream_seq' }) streamSeq!: string;
  @Column('uuid', { name: 'job_id' }) jobId!: string;
  @Column('timestamptz') at!: Date;
  @Column('int') attempt!: number;
  @Column('text') level!: string;
  @Column('text') message!: string;
}
