import { Cluster } from 'ioredis';
import type { JobDependency } from '../../core/job';
import { JOB_STATUSES, type JobStatus } from '../../core/job-status';
import type { RedisClient } from '../connection';
import type { RedisContext } from '../context';
import type { FlowDeps } from '../job-codec';
import { flowKeyBase } from './flow-record';

/**
 * Fills each claimed flow job's `dependencies` with their statuses (API.md
 * v1.2: a claimed job carries `[{ref, id, status}]`): HGET s of the
 * dependencies' job hashes (in their own queues, so any Redis Cluster slot:
 * see {@link hgets}); a dependency whose hash Redis already forgot (finished
 * and mirrored) takes its outcome from the flow's record: completed, else
 * cancelled.
 */
export async function resolveDependencies<T extends { dependencies: JobDependency[] }>(ctx: RedisContext, flows: [T, FlowDeps][]): Promise<void> {
  const reads: [string, string][] = [];
  for (const [, f] of flows) for (const d of f.deps) reads.push([`${ctx.keys(d.queue).base}job:${d.id}`, 's']);
  const states = await hgets(ctx.redis, reads);
  const missing: [string, string][] = [];
  const gone: { dep: JobDependency }[] = [];
  let n = 0;
  for (const [job, f] of flows) {
    job.dependencies = f.deps.map((d) => {
      const s = states[n++];
      const dep: JobDependency = { ref: d.ref, id: d.id, status: JOB_STATUSES.includes(s as JobStatus) ? (s as JobStatus) : 'completed' };
      if (!s) {
        missing.push([`${flowKeyBase(ctx.prefix, f.flowId)}out`, d.id]);
        gone.push({ dep });
      }
      return dep;
    });
  }
  if (!gone.length) return;
  const outcomes = await hgets(ctx.redis, missing);
  gone.forEach((g, i) => (g.dep.status = outcomes[i] === 'x' ? 'cancelled' : 'completed'));
}

/**
 * HGET of each (key, field). On one node, one pipeline (a command's own
 * error answers null, as before; a lost connection rejects). On a cluster
 * the keys live in any slot (the dependencies' queues, the flows' records),
 * and ioredis refuses a pipeline whose keys are not all served by one node
 * ("All keys in the pipeline should belong to the same slots allocation
 * group"): each HGET goes on its own, auto-pipelining batches them per node,
 * and any failure rejects.
 */
async function hgets(redis: RedisClient, reads: [string, string][]): Promise<(string | null)[]> {
  if (redis instanceof Cluster) return Promise.all(reads.map(([k, f]) => redis.hget(k, f)));
  const p = redis.pipeline();
  for (const [k, f] of reads) p.hget(k, f);
  return ((await p.exec()) ?? []).map(([e, v]) => (e ? null : (v as string | null)));
}
