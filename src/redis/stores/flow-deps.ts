import type { JobDependency } from '../../core/job';
import { JOB_STATUSES, type JobStatus } from '../../core/job-status';
import type { RedisContext } from '../context';
import type { FlowDeps } from '../job-codec';
import { flowKeyBase } from './flow-record';

/**
 * Fills each claimed flow job's `dependencies` with their statuses (API.md
 * v1.2: a claimed job carries `[{ref, id, status}]`): one pipeline of HGET s
 * over the dependencies' job hashes (in their own queues: separate commands,
 * so any Redis Cluster slot); a dependency whose hash Redis already forgot
 * (finished and mirrored) takes its outcome from the flow's record:
 * completed, else cancelled.
 */
export async function resolveDependencies<T extends { dependencies: JobDependency[] }>(ctx: RedisContext, flows: [T, FlowDeps][]): Promise<void> {
  const p = ctx.redis.pipeline();
  for (const [, f] of flows) for (const d of f.deps) p.hget(`${ctx.keys(d.queue).base}job:${d.id}`, 's');
  const states = ((await p.exec()) ?? []).map(([, v]) => v as string | null);
  const missing = ctx.redis.pipeline();
  const gone: { dep: JobDependency }[] = [];
  let n = 0;
  for (const [job, f] of flows) {
    job.dependencies = f.deps.map((d) => {
      const s = states[n++];
      const dep: JobDependency = { ref: d.ref, id: d.id, status: JOB_STATUSES.includes(s as JobStatus) ? (s as JobStatus) : 'completed' };
      if (!s) {
        missing.hget(`${flowKeyBase(ctx.prefix, f.flowId)}out`, d.id);
        gone.push({ dep });
      }
      return dep;
    });
  }
  if (!gone.length) return;
  const outcomes = ((await missing.exec()) ?? []).map(([, v]) => v as string | null);
  gone.forEach((g, i) => (g.dep.status = outcomes[i] === 'x' ? 'cancelled' : 'completed'));
}
