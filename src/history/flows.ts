import type { DataSource } from 'typeorm';
import type { RestoreJobFlow } from '../core/ports/restore';
import { projectCondition, UUID_RE } from './common';

/**
 * The flows of API.md v1.2 ("Workflows") as the history holds them
 * (migration 1796001700000-Workflows): for `GET /jobs/:id/dependencies` and
 * `GET /flows/:id` once Redis has forgotten finished jobs, and the console.
 * Project-scoped like the other history reads: a job or flow of another
 * project reads as unknown.
 */

/** One dependency of a job: its ref in the flow and its job id. */
export interface FlowDependency {
  ref: string;
  id: string;
}

/** One job of a flow as `GET /flows/:id` lists it; `dependsOn` holds job ids. */
export interface FlowJob {
  id: string;
  /** Null only for a job whose enqueued event carried no readable ref (src/mirror/projection.ts flowOf). */
  ref: string | null;
  status: string;
  dependsOn: string[];
}

/**
 * SQL of {@link dependenciesOf}: the job's row by primary key (its queue
 * names its project), then its edges, a range of `job_dependencies_pkey`.
 * The row comes back with a null dependency when the job has none, and no
 * row when the job is unknown. Ordered by ref (the order of `dependsOn` as
 * sent is not kept).
 */
export function dependenciesSql(jobId: string, project: string): { sql: string; params: unknown[] } {
  const params: unknown[] = [jobId];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const sql = `SELECT d.ref, d.depends_on_id AS id FROM jobs j LEFT JOIN job_dependencies d ON d.job_id = j.id
    WHERE j.id = $1::uuid AND ${projectCondition('j.queue', project, param)}
    ORDER BY d.ref, d.depends_on_id`;
  return { sql, params };
}

/**
 * A job's dependencies as mirrored from its `enqueued` event.
 * @returns `[{ref, id}]` ordered by ref (empty for a job outside flows or
 *   without dependencies), or null when PostgreSQL does not know the job
 *   in `project` (not mirrored yet, pruned, another project's, not a UUID).
 */
export async function dependenciesOf(db: DataSource, jobId: string, project: string): Promise<FlowDependency[] | null> {
  if (!UUID_RE.test(jobId)) return null;
  const { sql, params } = dependenciesSql(jobId.toLowerCase(), project);
  const rows: { ref: string | null; id: string | null }[] = await db.query(sql, params);
  if (!rows.length) return null;
  return rows.filter((r) => r.id !== null).map((r) => ({ ref: r.ref as string, id: r.id as string }));
}

/**
 * SQL of {@link flowJobs}: the flow's range of `jobs_flow_id` (≤ 1,000
 * rows, the project's condition a filter), each job's edges a range of
 * `job_dependencies_pkey`, aggregated per job.
 */
export function flowJobsSql(flowId: string, project: string): { sql: string; params: unknown[] } {
  const params: unknown[] = [flowId];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const sql = `SELECT j.id, j.flow_ref AS ref, j.status,
      coalesce((SELECT array_agg(d.depends_on_id::text ORDER BY d.ref, d.depends_on_id) FROM job_dependencies d WHERE d.job_id = j.id), '{}') AS depends_on
    FROM jobs j WHERE j.flow_id = $1::uuid AND ${projectCondition('j.queue', project, param)}
    ORDER BY j.id`;
  return { sql, params };
}

/**
 * A flow's jobs as mirrored: each with its ref, its status as the history
 * holds it, and the ids it depends on (ordered by their refs).
 * @returns the jobs by id (creation order: UUIDv7), empty when PostgreSQL
 *   knows no job of that flow in `project` (or flowId is not a UUID).
 */
export async function flowJobs(db: DataSource, flowId: string, project: string): Promise<FlowJob[]> {
  if (!UUID_RE.test(flowId)) return [];
  const { sql, params } = flowJobsSql(flowId.toLowerCase(), project);
  const rows: { id: string; ref: string | null; status: string; depends_on: string[] }[] = await db.query(sql, params);
  return rows.map((r) => ({ id: r.id, ref: r.ref, status: r.status, dependsOn: r.depends_on }));
}

/** Job ids per query of {@link readFlowFields}. */
const FIELDS_CHUNK = 1000;

/**
 * The flow fields of these jobs (those of a flow), `dependsOn` rebuilt from
 * `job_dependencies` with each dependency's queue as the edge names it
 * (migration 1796002050000-DependencyQueues), else from the dependency's
 * `jobs` row, else (an edge mirrored before that version whose dependency
 * the history no longer holds) the job's own queue; ordered by ref.
 * @param ids at most 1,000 per query (more are read in chunks).
 */
export async function readFlowFields(db: DataSource, ids: string[]): Promise<Map<string, RestoreJobFlow>> {
  const out = new Map<string, RestoreJobFlow>();
  for (let i = 0; i < ids.length; i += FIELDS_CHUNK) {
    const rows = (await db.query(
      `SELECT j.id::text AS id, j.flow_id::text AS fl, j.on_dependency_failure AS pol, j.flow_ref AS ref,
              coalesce((SELECT json_agg(json_build_object('ref', d.ref, 'id', d.depends_on_id::text, 'queue', coalesce(d.queue, dj.queue, j.queue)) ORDER BY d.ref, d.depends_on_id)
                        FROM job_dependencies d LEFT JOIN jobs dj ON dj.id = d.depends_on_id WHERE d.job_id = j.id), '[]'::json) AS dp
       FROM jobs j WHERE j.id = ANY($1::uuid[]) AND j.flow_id IS NOT NULL`,
      [ids.slice(i, i + FIELDS_CHUNK)],
    )) as { id: string; fl: string; pol: string | null; ref: string | null; dp: RestoreJobFlow['dependsOn'] }[];
    for (const r of rows) out.set(r.id, { flowId: r.fl, policy: r.pol === 'run' ? 'run' : 'cancel', ref: r.ref ?? '', dependsOn: r.dp });
  }
  return out;
}
