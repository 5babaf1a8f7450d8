/**
 * Turns events-stream entries into the rows the mirror writer stores. Pure:
 * no I/O, so the mapping is unit-tested on its own.
 *
 * Stream entry fields (see lua/includes/emit.lua), as entryFields() returns
 * them: e event, j job id, f from, t to, a attempt, at time (ms), x
 * executionSeq, ms duration, ra runAt (these travel packed in one header
 * field `h`), w worker, r reason, er error, d data JSON (result /
 * progress), and on `enqueued`: ty type, p payload, pr priority and o
 * "maxAttempts;timeoutMs;backoff" (also in the header), ik idempotency
 * key, ck concurrency key (when the job has one); `debounced` carries the
 * same ty, p, pr, ra, o and ck (the job's new spec). A flow job's `enqueued`
 * names `blocked` as its target (t); `unblocked` (blocked to waiting or
 * delayed, ra when it carries a runAt) and `blocked` (cancelled back to
 * blocked) are transitions like the others. `log` entries carry lvl and m.
 * A flow job's `enqueued` also carries fl (flow id), fp ('c' cancel, 'r'
 * run: its onDependencyFailure), rf (its ref) and dp (its dependencies,
 * JSON `[{"ref","id","queue"}]`): see {@link flowOf}.
 */

import { errorFingerprint } from '../core/error-fingerprint';
import { FLOW_LIMITS } from '../core/flow-graph';
import { JOB_STATUSES, JobEventName } from '../core/job-status';
import { splitOptions } from '../core/packed-options';
import { splitStreamId } from '../core/stream-ids';

/** Keys of the header's parts after the first five, in order (lua/includes/emit.lua); `o` is the rest of the header. */
const HEADER_TAIL = ['j', 'x', 'ms', 'pr', 'ra'] as const;

/**
 * An entry's flat field list (as XRANGE/XREADGROUP return it) as an object.
 * The header `h` = "event|from|to|attempt|at|jobId|x|ms|pr|ra|o"
 * (lua/includes/emit.lua; parts from the sixth on may be missing, an empty
 * part is an absent field, `o` is everything after the tenth '|') is
 * unpacked into e, f, t, a, at, j, x, ms, pr, ra and o. Entries of earlier
 * versions have a five-part header and the rest as fields of their own, as
 * `log` entries still do; both read the same.
 */
export function entryFields(flat: string[]): Record<string, string> {
  const o: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) {
    const k = flat[i];
    const v = flat[i + 1];
    if (k !== 'h') {
      o[k] = v;
      continue;
    }
    const p1 = v.indexOf('|');
    const p2 = v.indexOf('|', p1 + 1);
    const p3 = v.indexOf('|', p2 + 1);
    const p4 = v.indexOf('|', p3 + 1);
    let p5 = v.indexOf('|', p4 + 1);
    o.e = v.slice(0, p1);
    o.f = v.slice(p1 + 1, p2);
    o.t = v.slice(p2 + 1, p3);
    o.a = v.slice(p3 + 1, p4);
    o.at = p5 < 0 ? v.slice(p4 + 1) : v.slice(p4 + 1, p5);
    for (let n = 0; p5 >= 0; n++) {
      if (n === HEADER_TAIL.length) {
        if (p5 + 1 < v.length) o.o = v.slice(p5 + 1);
        break;
      }
      const next = v.indexOf('|', p5 + 1);
      if (next !== p5 + 1 && p5 + 1 < v.length) o[HEADER_TAIL[n]] = next < 0 ? v.slice(p5 + 1) : v.slice(p5 + 1, next);
      p5 = next;
    }
  }
  return o;
}

export interface StreamEntry {
  queue: string;
  /** Stream entry id, "<ms>-<seq>". */
  id: string;
  fields: Record<string, string>;
}

export interface EventRow {
  queue: string;
  streamMs: string;
  streamSeq: string;
  jobId: string;
  at: number;
  event: string;
  from: string | null;
  to: string | null;
  attempt: number | null;
  executionSeq: number | null;
  workerId: string | null;
  reason: string | null;
  error: string | null;
  data: string | null;
  /**
   * An execution's row may hold this event instead of a `job_events` row
   * (the view `job_timeline` shows it as one): a `claimed` event (the start's
   * claimMs/claimSeq) or a `completed` one (the end's endMs/endSeq/result).
   * Set by {@link project} only for events whose every field the row can
   * give back exactly (migration 1796001900000-FoldedExecutionEvents). Whether
   * a row holds it is the writer's to settle (src/mirror/batch-writer.ts):
   * this batch's row, an earlier batch's, or none — then a job_events row.
   */
  folded?: boolean;
}

export interface LogRow {
  queue: string;
  streamMs: string;
  streamSeq: string;
  jobId: string;
  at: number;
  attempt: number;
  level: string;
  message: string;
}

export interface JobInsert {
  id: string;
  queue: string;
  type: string;
  status: string;
  priority: number;
  maxAttempts: number;
  timeoutMs: number;
  backoff: string;
  idempotencyKey: string | null;
  /** The job's concurrency key (`ck` of its enqueued event), null when none. */
  concurrencyKey: string | null;
  /** A flow job's flow id, ref and policy (`fl`, `rf`, `fp` of its enqueued event: see {@link flowOf}); null outside flows. */
  flowId: string | null;
  flowRef: string | null;
  onDependencyFailure: 'cancel' | 'run' | null;
  payload: string;
  createdAt: number;
  runAt: number;
  streamMs: string;
  streamSeq: string;
  /** Later events of the same batch, folded in (see foldPatches): the row is written once. */
  attempts: number;
  workerId: string | null;
  executionSeq: number;
  startedAt: number | null;
  finishedAt: number | null;
  lastError: string | null;
  result: string | null;
  progress: string | null;
  updatedAt: number;
}

/** Columns an event may set on the `jobs` projection; undefined = leave as is. */
export interface JobPatch {
  id: string;
  streamMs: string;
  streamSeq: string;
  updatedAt: number;
  status?: string;
  attempts?: number;
  workerId?: string | null;
  executionSeq?: number;
  startedAt?: number | null;
  finishedAt?: number | null;
  runAt?: number;
  lastError?: string | null;
  result?: string | null;
  progress?: string | null;
  payload?: string;
  /** Set by a `debounced` event only: the job's new spec (its concurrency key null when the update sent none). */
  type?: string;
  priority?: number;
  maxAttempts?: number;
  timeoutMs?: number;
  backoff?: string;
  concurrencyKey?: string | null;
}

export interface ExecutionStart {
  jobId: string;
  executionSeq: number;
  queue: string;
  attempt: number;
  workerId: string | null;
  startedAt: number;
  /** Stream entry id of the `claimed` event this row holds (see EventRow.folded); null when that event is a job_events row. */
  claimMs: string | null;
  claimSeq: string | null;
  /** The `claimed` event this row is to hold (the writer's held set, heldEntries in src/mirror/batch-writer.ts). */
  claimEvent?: EventRow;
}

export interface ExecutionEnd extends ExecutionStart {
  finishedAt: number;
  outcome: 'completed' | 'failed' | 'timeout' | 'stalled' | 'released' | 'cancelled';
  error: string | null;
  durationMs: number | null;
  /** The execution's `claimed` event is in the same batch (folded in by foldStarts): this row is the whole execution. */
  startInBatch?: boolean;
  /** Stream entry id of the `completed` event this row holds, and that event's data (the result); null otherwise. */
  endMs: string | null;
  endSeq: string | null;
  result: string | null;
  /** The `completed` event this row is to hold (as claimEvent). */
  endEvent?: EventRow;
}

export interface DlqChange {
  jobId: string;
  /** true: the job is (now) in the DLQ; false: it left it (retried, or purged). */
  present: boolean;
  /** Left by DELETE /jobs/dlq (a `purged` event): the job stays `failed` in the history but never lists in the DLQ again. */
  purged?: boolean;
  lastError: string | null;
  /**
   * errorFingerprint(lastError) (src/core/error-fingerprint.ts) of a job
   * entering the DLQ, computed here once per failure; null otherwise.
   */
  fingerprint?: string | null;
  attempts: number;
  failedAt: number;
}

/** One edge of a flow (`job_dependencies`): job `jobId` waits for `dependsOnId`, whose ref in the flow is `ref` and whose queue is `queue`. */
export interface DependencyRow {
  jobId: string;
  dependsOnId: string;
  flowId: string;
  ref: string;
  /** The dependency's queue as `dp` names it (null when empty): the restore finds a dependency PostgreSQL never heard of there. */
  queue: string | null;
}

export interface MirrorBatch {
  events: EventRow[];
  logs: LogRow[];
  inserts: JobInsert[];
  /** The dependencies of the flow jobs of `inserts`, every edge once. */
  dependencies: DependencyRow[];
  patches: JobPatch[];
  starts: ExecutionStart[];
  ends: ExecutionEnd[];
  dlq: DlqChange[];
  /** Jobs whose last event in the batch left them completed or cancelled (retention). */
  finished: { queue: string; jobId: string; status: 'completed' | 'cancelled' }[];
  /**
   * Entries the projection cannot read (see {@link unreadable}), in stream
   * order: they make no row; the mirror writer quarantines them
   * (src/mirror/quarantine.ts). Every other entry makes exactly one
   * job_events or job_logs row.
   */
  rejected: { entry: StreamEntry; reason: string }[];
  /**
   * Entries mirrored with a part left out (a flow job whose `dp` cannot be
   * read is mirrored without its dependencies, see {@link flowOf}): the
   * mirror writer logs them (entry ids and reasons, never a value).
   */
  warnings: { entry: StreamEntry; reason: string }[];
}

/** Every event name the scripts emit (src/core/job-status.ts), and `log`. */
const EVENT_NAMES: ReadonlySet<string> = new Set<JobEventName | 'log'>([
  'enqueued', 'promoted', 'claimed', 'heartbeat_lost', 'progress', 'completed', 'retry_scheduled', 'failed', 'stalled', 'released',
  'cancelled', 'cancel_requested', 'retried_from_dlq', 'purged', 'debounced', 'unblocked', 'blocked', 'log',
]);
const STATUSES: ReadonlySet<string> = new Set(JOB_STATUSES);

/** A field that is there but is not a finite number ("abc", "NaN", "1e400"); absent and empty are fine. */
const notNumber = (v: string | undefined): boolean => v !== undefined && v !== '' && !Number.isFinite(Number(v));

/**
 * Why an entry cannot be mirrored as it is, or null when it can: no job id,
 * no time, an event or status name the scripts never write, a numeric field
 * that is not a number. Such an entry was not written by Sluice's scripts
 * (or was damaged): it must neither stop the writer nor land as a row of
 * made-up values. A few comparisons per entry, on values the projection
 * reads anyway. Values out of PostgreSQL's range (an int past 2^31, a time
 * past year 294276) are left to PostgreSQL, whose refusal the writer
 * isolates. The reason never quotes a value (it is logged).
 */
function unreadable(f: Record<string, string>, at: number, attempt: number | null, x: number | null): string | null {
  if (!f.j) return 'job id missing';
  if (f.at === undefined || f.at === '' || !Number.isFinite(at)) return 'time missing or not a number';
  if (!EVENT_NAMES.has(f.e)) return 'unknown event name';
  // attempt and x: num() of the field, NaN (never null) when it is there but not a number.
  if (attempt !== null && !Number.isFinite(attempt)) return 'numeric field not a number';
  if (f.e === 'log') return null;
  if ((f.f && !STATUSES.has(f.f)) || (f.t && !STATUSES.has(f.t))) return 'unknown status';
  if ((x !== null && !Number.isFinite(x)) || notNumber(f.ms) || notNumber(f.pr) || notNumber(f.ra)) return 'numeric field not a number';
  return null;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A flow job's place in its flow, as its `enqueued` event carries it. */
export interface FlowFields {
  flowId: string;
  ref: string | null;
  onDependencyFailure: 'cancel' | 'run' | null;
  /** Its dependencies (ref, job id), in the order of `dp`; empty when `dp` could not be read (then `warning` says why). */
  dependencies: { ref: string; id: string; queue: string }[];
  /** Why a part was left out (never quotes a value), or null. */
  warning: string | null;
}

/**
 * The flow fields of an `enqueued` event (fl, rf, fp, dp: lua/enqueueJobs-5.lua),
 * or null for a job outside flows (no `fl`). What the scripts write is
 * checked, not trusted: a flow id that is not a UUID drops the flow part
 * (the job is mirrored as a plain one); a ref outside
 * `FLOW_LIMITS.refPattern` or an unknown policy is null; a `dp` that is
 * not JSON, not an array of `{ref, id, queue}` (ref a ref, id a UUID,
 * queue a string), lists a job twice or more than
 * `FLOW_LIMITS.maxDependsOn` entries gives no dependencies. Each case
 * sets `warning`: the job itself is always mirrored, the writer never stops.
 */
export function flowOf(f: Record<string, string>): FlowFields | null {
  if (f.fl === undefined || f.fl === '') return null;
  if (!UUID_RE.test(f.fl)) return null;
  const warnings: string[] = [];
  const ref = f.rf !== undefined && FLOW_LIMITS.refPattern.test(f.rf) ? f.rf : null;
  if (ref === null) warnings.push('flow ref missing or malformed');
  const onDependencyFailure = f.fp === 'c' ? 'cancel' : f.fp === 'r' ? 'run' : null;
  if (onDependencyFailure === null) warnings.push('flow policy missing or unknown');
  const dependencies = readDependencies(f.dp);
  if (typeof dependencies === 'string') warnings.push(dependencies);
  return {
    flowId: f.fl.toLowerCase(),
    ref,
    onDependencyFailure,
    dependencies: typeof dependencies === 'string' ? [] : dependencies,
    warning: warnings.length ? warnings.join('; ') : null,
  };
}

/** `dp` as (ref, id) pairs, or why it cannot be read (a reason that quotes no value). */
function readDependencies(dp: string | undefined): { ref: string; id: string; queue: string }[] | string {
  if (dp === undefined || dp === '') return [];
  let v: unknown;
  try {
    v = JSON.parse(dp);
  } catch {
    return 'flow dependencies (dp) not JSON: mirrored without them';
  }
  if (!Array.isArray(v)) return 'flow dependencies (dp) not an array: mirrored without them';
  if (v.length > FLOW_LIMITS.maxDependsOn) return `flow dependencies (dp) over ${FLOW_LIMITS.maxDependsOn} entries: mirrored without them`;
  const out: { ref: string; id: string; queue: string }[] = [];
  const seen = new Set<string>();
  for (const d of v as unknown[]) {
    const o = d as { ref?: unknown; id?: unknown; queue?: unknown } | null;
    if (
      typeof o !== 'object' || o === null || Array.isArray(o) ||
      typeof o.ref !== 'string' || !FLOW_LIMITS.refPattern.test(o.ref) ||
      typeof o.id !== 'string' || !UUID_RE.test(o.id) ||
      typeof o.queue !== 'string'
    ) {
      return 'flow dependencies (dp) of the wrong shape: mirrored without them';
    }
    const id = o.id.toLowerCase();
    if (seen.has(id)) return 'flow dependencies (dp) name a job twice: mirrored without them';
    seen.add(id);
    out.push({ ref: o.ref, id, queue: o.queue });
  }
  return out;
}

const num = (v: string | undefined): number | null => (v === undefined || v === '' ? null : Number(v));
const str = (v: string | undefined): string | null => (v === undefined || v === '' ? null : v);

/**
 * Whether an execution's row can hold event `e` (a `claimed` or a
 * `completed`) and give it back unchanged through the view job_timeline:
 * the transition the view writes (`from` → `to`), an attempt, an execution
 * and a worker, and no reason, error — nor data, unless `withData` (the
 * completed event's data is the row's `result`).
 */
function foldable(e: EventRow, from: string, to: string, withData = false): boolean {
  return e.from === from && e.to === to && e.attempt !== null && e.executionSeq !== null && e.workerId !== null &&
    e.reason === null && e.error === null && (withData || e.data === null);
}

function outcomeOf(e: string, reason: string | null): ExecutionEnd['outcome'] | null {
  switch (e) {
    case 'completed':
      return 'completed';
    case 'retry_scheduled':
      return reason === 'timeout' ? 'timeout' : 'failed';
    case 'failed':
      return reason === 'lease_expired' ? 'stalled' : reason === 'timeout' ? 'timeout' : 'failed';
    case 'stalled':
      return 'stalled';
    case 'released':
      return 'released';
    case 'cancelled':
      return 'cancelled';
    default:
      return null;
  }
}

/**
 * Maps entries (in stream order per queue) to row sets. Patches of one job
 * within the batch are merged in order, so each job gets at most one patch.
 * Entries it cannot read go to `rejected` and make no row.
 */
export function project(entries: StreamEntry[]): MirrorBatch {
  const batch: MirrorBatch = { events: [], logs: [], inserts: [], dependencies: [], patches: [], starts: [], ends: [], dlq: [], finished: [], rejected: [], warnings: [] };
  const patches = new Map<string, JobPatch>();
  const dlq = new Map<string, DlqChange>();
  const finished = new Map<string, MirrorBatch['finished'][number] | null>();
  const withEdges = new Set<string>();
  for (const entry of entries) {
    const { queue, id, fields: f } = entry;
    const jobId = f.j;
    const at = Number(f.at);
    const attempt = num(f.a);
    const x = num(f.x);
    const bad = unreadable(f, at, attempt, x);
    if (bad !== null) {
      batch.rejected.push({ entry, reason: bad });
      continue;
    }
    const [streamMs, streamSeq] = splitStreamId(id);
    if (f.e === 'log') {
      batch.logs.push({ queue, streamMs, streamSeq, jobId, at, attempt: attempt ?? 0, level: f.lvl || 'info', message: f.m ?? '' });
      continue;
    }
    const reason = str(f.r);
    const error = str(f.er);
    const worker = str(f.w);
    const ev: EventRow = {
      queue, streamMs, streamSeq, jobId, at, event: f.e, from: str(f.f), to: str(f.t), attempt, executionSeq: x,
      workerId: worker, reason, error, data: f.e === 'enqueued' || f.e === 'debounced' ? str(f.p) : str(f.d),
    };
    batch.events.push(ev);

    if (f.e === 'enqueued') {
      const o = splitOptions(f.o);
      const flow = f.fl === undefined ? null : flowOf(f);
      if (f.fl !== undefined && f.fl !== '' && flow === null) batch.warnings.push({ entry, reason: 'flow id (fl) not a UUID: mirrored as a job outside flows' });
      if (flow) {
        if (flow.warning !== null) batch.warnings.push({ entry, reason: flow.warning });
        // The same entry twice in a batch (a replay) writes its edges once.
        if (!withEdges.has(jobId)) for (const d of flow.dependencies) batch.dependencies.push({ jobId, dependsOnId: d.id, flowId: flow.flowId, ref: d.ref, queue: d.queue || null });
        withEdges.add(jobId);
      }
      batch.inserts.push({
        id: jobId, queue, type: f.ty ?? '', status: f.t, priority: num(f.pr) ?? 0, maxAttempts: o?.maxAttempts || 1,
        timeoutMs: o?.timeoutMs || 600_000, backoff: o?.backoff ?? '', idempotencyKey: str(f.ik), concurrencyKey: str(f.ck), payload: f.p ?? '{}',
        flowId: flow?.flowId ?? null, flowRef: flow?.ref ?? null, onDependencyFailure: flow?.onDependencyFailure ?? null,
        createdAt: at, runAt: num(f.ra) ?? at, streamMs, streamSeq,
        attempts: 0, workerId: null, executionSeq: 0, startedAt: null, finishedAt: null, lastError: null, result: null,
        progress: null, updatedAt: at,
      });
      finished.set(jobId, null);
      continue;
    }

    const p: JobPatch = patches.get(jobId) ?? { id: jobId, streamMs, streamSeq, updatedAt: at };
    p.streamMs = streamMs;
    p.streamSeq = streamSeq;
    p.updatedAt = at;
    if (f.t && f.e !== 'cancel_requested' && f.e !== 'progress') p.status = f.t;
    if (x !== null) p.executionSeq = x;
    if (worker !== null) p.workerId = worker;
    switch (f.e) {
      case 'claimed':
        p.attempts = attempt ?? undefined;
        p.startedAt = at;
        p.finishedAt = null;
        // The execution's row may hold the event when it can give every field back (the view job_timeline).
        if (foldable(ev, 'waiting', 'active')) ev.folded = true;
        batch.starts.push({
          jobId, executionSeq: x ?? 0, queue, attempt: attempt ?? 0, workerId: worker, startedAt: at,
          claimMs: ev.folded ? streamMs : null, claimSeq: ev.folded ? streamSeq : null, claimEvent: ev.folded ? ev : undefined,
        });
        break;
      case 'progress':
        p.progress = str(f.d);
        break;
      case 'completed':
        p.attempts = attempt ?? undefined;
        p.result = str(f.d);
        p.finishedAt = at;
        break;
      case 'retry_scheduled':
        p.attempts = attempt ?? undefined;
        p.lastError = error;
        p.runAt = num(f.ra) ?? at;
        break;
      case 'failed':
        p.attempts = attempt ?? undefined;
        p.lastError = error;
        p.finishedAt = at;
        dlq.set(jobId, { jobId, present: true, lastError: error, fingerprint: errorFingerprint(error ?? ''), attempts: attempt ?? 0, failedAt: at });
        break;
      case 'stalled':
        // On the last attempt a `failed` event follows at once (same script call).
        p.attempts = attempt ?? undefined;
        p.lastError = `lease expired (stalled) on attempt ${attempt}`;
        break;
      case 'released':
        p.attempts = Math.max(0, (attempt ?? 1) - 1);
        // Released with a delay (POST /jobs/:id/release with delayMs): `delayed` until then.
        if (num(f.ra) !== null) p.runAt = num(f.ra)!;
        break;
      case 'cancelled':
        p.finishedAt = at;
        break;
      case 'retried_from_dlq':
        p.attempts = 0;
        p.finishedAt = null;
        p.result = null;
        p.runAt = at;
        if (f.p) p.payload = f.p;
        dlq.set(jobId, { jobId, present: false, lastError: null, attempts: 0, failedAt: at });
        break;
      case 'debounced': {
        // The enqueue that updated the job sent its whole spec, as `enqueued` does.
        const o = splitOptions(f.o);
        if (f.ty) p.type = f.ty;
        if (f.p !== undefined) p.payload = f.p;
        p.priority = num(f.pr) ?? 0;
        p.runAt = num(f.ra) ?? at;
        if (o) {
          p.maxAttempts = o.maxAttempts || 1;
          p.timeoutMs = o.timeoutMs || 600_000;
          p.backoff = o.backoff;
        }
        // The job is what the last request asked for: without a key, it has none now.
        p.concurrencyKey = str(f.ck);
        break;
      }
      case 'unblocked':
        // A flow job's dependencies let it run: waiting, or delayed until its
        // own runAt (the enqueued event's, unless this one carries another).
        if (num(f.ra) !== null) p.runAt = num(f.ra)!;
        break;
      case 'blocked':
        // Back from cancelled (a DLQ retry of the dependency that cancelled it): not finished any more.
        p.finishedAt = null;
        break;
      case 'purged':
        // Status stays 'failed' (f.t): the history keeps the job as it ended.
        dlq.set(jobId, { jobId, present: false, purged: true, lastError: null, attempts: attempt ?? 0, failedAt: at });
        break;
    }
    patches.set(jobId, p);
    const outcome = x !== null && f.f === 'active' ? outcomeOf(f.e, reason) : null;
    if (outcome) {
      const ms = num(f.ms);
      const held = f.e === 'completed' && foldable(ev, 'active', 'completed', true);
      if (held) ev.folded = true;
      batch.ends.push({
        jobId, executionSeq: x as number, queue, attempt: attempt ?? 0, workerId: worker,
        startedAt: ms !== null ? at - ms : at, finishedAt: at, outcome, error, durationMs: ms, claimMs: null, claimSeq: null,
        endMs: held ? streamMs : null, endSeq: held ? streamSeq : null, result: held ? ev.data : null, endEvent: held ? ev : undefined,
      });
    }
    if (f.t === 'completed' || f.t === 'cancelled') finished.set(jobId, { queue, jobId, status: f.t });
    else if (f.e !== 'progress' && f.e !== 'cancel_requested') finished.set(jobId, null);
  }
  batch.patches = foldPatches(batch.inserts, [...patches.values()]);
  batch.ends = foldStarts(batch.starts, batch.ends);
  batch.dlq = [...dlq.values()];
  batch.finished = [...finished.values()].filter((v): v is MirrorBatch['finished'][number] => v !== null);
  return batch;
}

/**
 * A job enqueued and changed within one batch is written once: its patch is
 * applied to its insert row (same "newest event wins" result, one row write
 * instead of an insert plus an update). Returns the patches left.
 */
function foldPatches(inserts: JobInsert[], patches: JobPatch[]): JobPatch[] {
  if (!inserts.length || !patches.length) return patches;
  const byId = new Map(inserts.map((i) => [i.id, i]));
  const left: JobPatch[] = [];
  for (const p of patches) {
    const row = byId.get(p.id);
    if (!row) {
      left.push(p);
      continue;
    }
    if (p.status !== undefined) row.status = p.status;
    if (p.attempts !== undefined) row.attempts = p.attempts;
    if (p.workerId !== undefined) row.workerId = p.workerId;
    if (p.executionSeq !== undefined) row.executionSeq = p.executionSeq;
    if (p.startedAt !== undefined) row.startedAt = p.startedAt;
    if (p.finishedAt !== undefined) row.finishedAt = p.finishedAt;
    if (p.runAt !== undefined) row.runAt = p.runAt;
    if (p.lastError !== undefined) row.lastError = p.lastError;
    if (p.result !== undefined) row.result = p.result;
    if (p.progress !== undefined) row.progress = p.progress;
    if (p.payload !== undefined) row.payload = p.payload;
    if (p.type !== undefined) row.type = p.type;
    if (p.priority !== undefined) row.priority = p.priority;
    if (p.maxAttempts !== undefined) row.maxAttempts = p.maxAttempts;
    if (p.timeoutMs !== undefined) row.timeoutMs = p.timeoutMs;
    if (p.backoff !== undefined) row.backoff = p.backoff;
    if (p.concurrencyKey !== undefined) row.concurrencyKey = p.concurrencyKey;
    row.updatedAt = p.updatedAt;
    row.streamMs = p.streamMs;
    row.streamSeq = p.streamSeq;
  }
  return left;
}

/**
 * An execution started and ended within one batch is written once, by its
 * end row, carrying the start's time (and the duration derived from it).
 * The start rows of those executions are removed from `starts` in place.
 */
function foldStarts(starts: ExecutionStart[], ends: ExecutionEnd[]): ExecutionEnd[] {
  if (!starts.length || !ends.length) return ends;
  const key = (r: { jobId: string; executionSeq: number }) => `${r.jobId}/${r.executionSeq}`;
  const byKey = new Map(starts.map((s) => [key(s), s]));
  const folded = new Set<string>();
  for (const e of ends) {
    const s = byKey.get(key(e));
    if (!s) continue;
    e.startedAt = s.startedAt;
    // The whole row holds the claim when the view would show it as it was: same worker and attempt
    // (otherwise the claim is not this row's to hold; the writer checks whether an earlier batch's row holds it).
    if ((e.workerId === null || e.workerId === s.workerId) && e.attempt === s.attempt) {
      e.claimMs = s.claimMs;
      e.claimSeq = s.claimSeq;
      e.claimEvent = s.claimEvent;
    }
    if (e.durationMs === null) e.durationMs = Math.max(0, e.finishedAt - s.startedAt);
    if (e.workerId === null) e.workerId = s.workerId;
    e.startInBatch = true;
    folded.add(key(e));
  }
  if (folded.size) {
    const kept = starts.filter((s) => !folded.has(key(s)));
    starts.length = 0;
    starts.push(...kept);
  }
  return ends;
}
