import { ErrorDetail, ValidationError } from './errors';
import { EnqueueInput, NormalizedEnqueue, PayloadTooLargeError, normalizeEnqueue } from './job-options';

/**
 * Limits of API.md `POST /flows` ("Workflows: jobs that wait for other jobs").
 * API.md says a ref is a string of 1..64; its alphabet is *ours*: the job
 * type's (`LIMITS.typePattern`), so a ref is safe in a path, a log line or a
 * Redis key, and can be quoted in an error message as it is (no NUL, no lone
 * surrogate, no space, no `→`: "cycle: a → b → a" reads one way only).
 */
export const FLOW_LIMITS = Object.freeze({
  /** Jobs per flow: 1..1000 (API.md). */
  maxJobs: 1000,
  refPattern: /^[A-Za-z0-9_.:-]{1,64}$/,
  /** Refs in one `dependsOn`, checked before its entries are read. */
  maxDependsOn: 1000,
  /**
   * Edges (`dependsOn` entries) of the whole flow: 20,000, so a fan-in of
   * 999 or twenty dependencies a job fits, while a 1,000-job complete DAG
   * (499,500 edges: a 3.4 MB body, ~120 MB of Redis, seconds of scripts)
   * is refused before anything is read further.
   */
  maxEdges: 20_000,
  /** The flow's own `idempotencyKey` (API.md v1.3): 1..256 characters. */
  maxIdempotencyKeyLength: 256,
});

export type DependencyFailurePolicy = 'cancel' | 'run';

/** One job of a `POST /flows` body: the `POST /jobs` fields plus its place in the graph. */
export interface FlowJobInput extends EnqueueInput {
  /** Names the job within this request: 1..64 of `[A-Za-z0-9_.:-]`, unique. */
  ref: string;
  /** Refs of this request that must end first; no duplicates, not the job's own ref. */
  dependsOn?: string[];
  /** What a failed or cancelled dependency does to this job (default 'cancel'). */
  onDependencyFailure?: DependencyFailurePolicy;
}

/** A flow job after validation: the normalized enqueue (bare queue name) and its edges, both ways. */
export interface NormalizedFlowJob extends NormalizedEnqueue {
  ref: string;
  /** The refs it waits for, in the order sent. */
  dependsOn: string[];
  onDependencyFailure: DependencyFailurePolicy;
  /** The refs that wait for it, in request order. */
  dependents: string[];
  /** Its position in the request's `jobs`. */
  index: number;
}

export interface NormalizedFlow {
  /** In request order. */
  jobs: NormalizedFlowJob[];
  /** Every ref once, dependencies before dependents; among jobs ready together, the order they became ready (request order first). */
  order: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const at = (i: number) => `jobs.${i}.`;
const REF_RULE = `must match ${FLOW_LIMITS.refPattern.source}`;

/**
 * Validates a `POST /flows` body as a whole (all or nothing) and orders it.
 *
 * Each job is checked by {@link normalizeEnqueue} with the prefix `jobs.i.`,
 * and the details of every job, of the refs and of the graph are thrown
 * together, so a client sees every bad field at once. Fields unknown to
 * `POST /jobs` are ignored here, as normalizeEnqueue ignores them (the HTTP
 * layer's whitelist refuses them).
 *
 * Refused on a flow job, because a job of a graph must be a new job of its
 * own: `debounce` (a debounced job may be merged into another, pending job)
 * and `idempotencyKey` (a replayed key returns an existing job, maybe already
 * finished or in another flow). The graph could follow neither.
 *
 * A cycle is found after Kahn's algorithm: from each job it could not order,
 * walk to a dependency it could not order either until a job repeats; each
 * cycle found that way (vertex-disjoint, at least one) gives one detail per ref
 * on it, at `jobs.i.dependsOn`: "cycle: a → b → a", where `a → b` reads
 * "a depends on b", starting at the ref sent first (past 10 refs the message
 * names the first 10 and the length, so the details stay linear in size).
 * Cycles are looked for only when every ref and every `dependsOn` is
 * well-formed. Time and memory are linear in jobs + edges.
 *
 * @param input the parsed body, not trusted in any way.
 * @param maxPayloadBytes serialized payload limit per job (MAX_PAYLOAD_BYTES).
 * @returns the jobs in request order and a topological order of their refs.
 * @throws ValidationError (400 `validation_failed`) listing every problem as `{path, message}`.
 * @throws PayloadTooLargeError (413) at the first job whose payload is over the limit; its message names `jobs.i`.
 */
export function normalizeFlow(input: unknown, maxPayloadBytes: number): NormalizedFlow {
  if (!isObject(input)) throw new ValidationError('the body must be a JSON object', [{ path: '', message: 'must be a JSON object' }]);
  const raw = input.jobs;
  if (!Array.isArray(raw) || raw.length < 1 || raw.length > FLOW_LIMITS.maxJobs) {
    throw new ValidationError('invalid flow: jobs', [{ path: 'jobs', message: `must be an array of 1..${FLOW_LIMITS.maxJobs} jobs` }]);
  }
  const details: ErrorDetail[] = [];
  let graphOk = true;
  const bad = (path: string, message: string, graph = false) => {
    details.push({ path, message });
    if (graph) graphOk = false;
  };

  // Pass 1: each job's own fields and its ref.
  const refs = new Map<string, number>(); // a Map: '__proto__' is a valid ref
  const enqueued: (NormalizedEnqueue | undefined)[] = [];
  const policies: DependencyFailurePolicy[] = [];
  raw.forEach((job: unknown, i) => {
    if (!isObject(job)) return bad(`jobs.${i}`, 'must be an object', true);
    const { ref, onDependencyFailure } = job;
    // normalizeEnqueue ignores the flow's own fields; these two it would accept, so they leave first.
    const { debounce, idempotencyKey, ...rest } = job;
    if (typeof ref !== 'string' || !FLOW_LIMITS.refPattern.test(ref)) bad(at(i) + 'ref', REF_RULE, true);
    else if (refs.has(ref)) bad(at(i) + 'ref', `duplicate ref "${ref}" (first at jobs.${refs.get(ref)})`, true);
    else refs.set(ref, i);
    if (onDependencyFailure !== undefined && onDependencyFailure !== 'cancel' && onDependencyFailure !== 'run') bad(at(i) + 'onDependencyFailure', 'must be "cancel" or "run"');
    policies[i] = onDependencyFailure === 'run' ? 'run' : 'cancel';
    if (debounce !== undefined) bad(at(i) + 'debounce', 'is not allowed in a flow: a debounced job may be merged into another job');
    if (idempotencyKey !== undefined) bad(at(i) + 'idempotencyKey', 'is not allowed in a flow: a replayed key would return an existing job');
    try {
      enqueued[i] = normalizeEnqueue(rest as unknown as EnqueueInput, maxPayloadBytes, at(i));
    } catch (e) {
      if (e instanceof PayloadTooLargeError) throw Object.assign(new PayloadTooLargeError(e.limitBytes), { message: `jobs.${i}: ${e.message}` });
      if (!(e instanceof ValidationError)) throw e;
      details.push(...e.details);
    }
  });

  let edges = 0;
  for (const job of raw) if (isObject(job) && Array.isArray(job.dependsOn)) edges += job.dependsOn.length;
  if (edges > FLOW_LIMITS.maxEdges) {
    throw new ValidationError('invalid flow: jobs', [{ path: 'jobs', message: `must hold at most ${FLOW_LIMITS.maxEdges} dependencies in all (dependsOn entries); this flow has ${edges}` }]);
  }

  // Pass 2: the edges, now that every ref is known.
  const deps: number[][] = raw.map(() => []);
  const dependents: number[][] = raw.map(() => []);
  raw.forEach((job: unknown, i) => {
    const list = isObject(job) ? job.dependsOn : undefined;
    if (list === undefined) return;
    if (!Array.isArray(list)) return bad(at(i) + 'dependsOn', 'must be an array of refs', true);
    if (list.length > FLOW_LIMITS.maxDependsOn) return bad(at(i) + 'dependsOn', `must list at most ${FLOW_LIMITS.maxDependsOn} refs`, true);
    const own = (job as Record<string, unknown>).ref;
    const seen = new Set<string>();
    list.forEach((dep: unknown, j) => {
      const path = `${at(i)}dependsOn.${j}`;
      if (typeof dep !== 'string' || !FLOW_LIMITS.refPattern.test(dep)) return bad(path, REF_RULE, true);
      if (dep === own) return bad(path, `self-reference: "${dep}" cannot depend on itself`, true);
      if (seen.has(dep)) return bad(path, `duplicate ref "${dep}" in dependsOn`, true);
      seen.add(dep);
      const d = refs.get(dep);
      if (d === undefined) return bad(path, `unknown ref "${dep}"`, true);
      deps[i].push(d);
      dependents[d].push(i);
    });
  });

  const refOf = (k: number) => (raw[k] as FlowJobInput).ref;
  // Pass 3: Kahn's algorithm; what it cannot order holds a cycle.
  const order: number[] = [];
  if (graphOk) {
    const indegree = deps.map((d) => d.length);
    for (let i = 0; i < raw.length; i++) if (indegree[i] === 0) order.push(i);
    for (let head = 0; head < order.length; head++) {
      for (const k of dependents[order[head]]) if (--indegree[k] === 0) order.push(k);
    }
    if (order.length < raw.length) {
      for (const cycle of findCycles(deps, indegree)) {
        const message = cycleMessage(cycle.map(refOf));
        for (const k of cycle) bad(at(k) + 'dependsOn', message);
      }
    }
  }
  if (details.length) {
    const paths = details.slice(0, 10).map((d) => d.path).join(', ');
    throw new ValidationError(`invalid flow: ${paths}${details.length > 10 ? `, … (${details.length} problems)` : ''}`, details);
  }

  const jobs = raw.map((job: FlowJobInput, i): NormalizedFlowJob => ({
    ...(enqueued[i] as NormalizedEnqueue),
    ref: job.ref,
    dependsOn: deps[i].map(refOf),
    onDependencyFailure: policies[i],
    dependents: dependents[i].map(refOf),
    index: i,
  }));
  return { jobs, order: order.map(refOf) };
}

/** Refs a cycle's message names at most: the message is repeated on every ref of the cycle, so it must not grow with it. */
const CYCLE_REFS_SHOWN = 10;

/** "cycle: a → b → a"; a longer cycle shows its first refs and its length: "cycle of 1000 refs: a → b → … → a". */
function cycleMessage(refs: string[]): string {
  if (refs.length <= CYCLE_REFS_SHOWN) return `cycle: ${[...refs, refs[0]].join(' → ')}`;
  return `cycle of ${refs.length} refs: ${refs.slice(0, CYCLE_REFS_SHOWN).join(' → ')} → … → ${refs[0]}`;
}

/**
 * Vertex-disjoint cycles among the jobs Kahn's algorithm left unordered
 * (`indegree > 0`): each such job has a dependency left unordered too, so
 * following the first one from any of them must come back to a job of the
 * same walk. Each cycle is rotated to start at its lowest index.
 */
function findCycles(deps: number[][], indegree: number[]): number[][] {
  const state = new Uint8Array(deps.length); // 0 not seen, 1 on this walk, 2 walked before
  const cycles: number[][] = [];
  for (let start = 0; start < deps.length; start++) {
    if (indegree[start] === 0 || state[start] !== 0) continue;
    const walk: number[] = [];
    let v = start;
    while (state[v] === 0) {
      state[v] = 1;
      walk.push(v);
      v = deps[v].find((d) => indegree[d] > 0) as number;
    }
    if (state[v] === 1) {
      const cycle = walk.slice(walk.indexOf(v));
      const first = cycle.indexOf(cycle.reduce((a, b) => Math.min(a, b)));
      cycles.push([...cycle.slice(first), ...cycle.slice(0, first)]);
    }
    for (const w of walk) state[w] = 2;
  }
  return cycles;
}
