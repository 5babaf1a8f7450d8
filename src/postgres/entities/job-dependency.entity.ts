import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * `job_dependencies`: one row per edge of a flow's graph — job `jobId` waits
 * for job `dependsOnId`, named `ref` in the flow (migration
 * 1796001700000-Workflows). Written by the mirror writer from the flow job's
 * `enqueued` event (stream field dp), never updated.
 */
@Entity({ name: 'job_dependencies' })
export class JobDependencyEntity {
  @PrimaryColumn('uuid', { name: 'job_id' }) jobId!: string;
  @PrimaryColumn('uuid', { name: 'depends_on_id' }) dependsOnId!: string;
  @Column('uuid', { name: 'flow_id' }) flowId!: string;
  /** The dependency's ref in the flow. */
  @Column('text') ref!: string;
  /** The dependency's queue (migration 1796002050000-DependencyQueues); null for edges mirrored before it. */
  @Column('text', { nullable: true }) queue!: string | null;
}
