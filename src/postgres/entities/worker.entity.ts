import { Column, Entity, PrimaryColumn } from 'typeorm';

/** `workers`: the history of worker processes (the live registry is in Redis). */
@Entity({ name: 'workers' })
export class WorkerEntity {
  @PrimaryColumn('text') id!: string;
  @Column('text') hostname!: string;
  @Column('int') pid!: number;
  @Column('text') queues!: string;
  @Column('int') concurrency!: number;
  @Column('timestamptz', { name: 'started_at' }) startedAt!: Date;
  @Column('timestamptz', { name: 'last_heartbeat_at' }) lastHeartbeatAt!: Date;
  @Column('text') status!: string;
}
