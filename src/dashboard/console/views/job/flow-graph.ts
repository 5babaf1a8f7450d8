import type { Flow, FlowJob } from '../../api/types';

/** One line of a flow's indented list: the job, its depth and the refs of what it waits for. */
export interface FlowLine {
  job: FlowJob;
  /** the longest chain of dependencies above it: 0 for a root */
  depth: number;
  /** refs (or short ids) of its dependencies, in the order it named them */
  waitsFor: string[];
}

/** How a flow job is named on screen: its ref, else the end of its id. */
export const refOf = (j: { ref: string | null; id: string }) => j.ref ?? j.id.slice(-12);

/**
 * The flow's jobs ordered by depth (roots first; every job below all of its dependencies), request
 * order within a depth. Kahn's algorithm, O(jobs + edges), so 10,000 jobs cost nothing; a
 * dependency that is not a job of the flow is ignored, and jobs on a cycle (which POST /flows
 * refuses) come last at depth 0 rather than looping.
 */
export function flowLines(flow: Flow): FlowLine[] {
  const byId = new Map(flow.jobs.map((j, i) => [j.id, i]));
  const deps = flow.jobs.map((j) => j.dependsOn.map((d) => byId.get(d)).filter((i): i is number => i !== undefined));
  const children: number[][] = flow.jobs.map(() => []);
  const left = deps.map((d) => d.length);
  deps.forEach((d, i) => d.forEach((p) => children[p].push(i)));
  const depth = flow.jobs.map(() => 0);
  const done = flow.jobs.map(() => false);
  const queue = left.flatMap((n, i) => (n === 0 ? [i] : []));
  for (let k = 0; k < queue.length; k++) {
    const i = queue[k];
    done[i] = true;
    for (const c of children[i]) {
      depth[c] = Math.max(depth[c], depth[i] + 1);
      if (--left[c] === 0) queue.push(c);
    }
  }
  const order = flow.jobs.map((_, i) => i).filter((i) => done[i]).sort((a, b) => depth[a] - depth[b] || a - b);
  const stuck = flow.jobs.map((_, i) => i).filter((i) => !done[i]);
  const nameOf = (id: string) => {
    const i = byId.get(id);
    return i === undefined ? id.slice(-12) : refOf(flow.jobs[i]);
  };
  return [...order, ...stuck].map((i) => ({ job: flow.jobs[i], depth: done[i] ? depth[i] : 0, waitsFor: flow.jobs[i].dependsOn.map(nameOf) }));
}

/** The jobs of the flow that wait for `jobId` (its dependents), in request order. */
export function dependentsOf(flow: Flow, jobId: string): FlowJob[] {
  return flow.jobs.filter((j) => j.dependsOn.includes(jobId));
}

/** Non-zero counts in status order, e.g. "2 completed · 1 active"; "no jobs" when all are zero. */
export function countsText(counts: Flow['counts'], order: readonly string[]): string {
  const c = counts as Record<string, number>;
  const parts = order.filter((s) => (c[s] ?? 0) > 0).map((s) => `${c[s].toLocaleString('en')} ${s}`);
  return parts.length ? parts.join(' · ') : 'no jobs';
}
