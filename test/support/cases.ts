import { EnqueueInput, normalizeEnqueue } from '../../src/core/job-options';
import type { RedisClient } from '../../src/redis/connection';
import { killAll, SluiceProcess, startSluice } from './process';
import { readEvents, sleep, TestStore } from './redis';

/**
 * Helpers for the CASES.md failure-case tests (test/integration/cases):
 * enqueueing through the store, reading one queue's audit events, the
 * "exactly one terminal event per job" check every case makes, worker
 * processes bound to a test's prefix, and a supervisor that restarts a worker.
 */

export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** One audit event of a queue's events stream; `at` is Redis time, ms. */
export interface AuditEvent {
  streamId: string;
  /** Event name (enqueued, claimed, stalled, completed, ...). */
  e: string;
  /** Job id. */
  j: string;
  /** Attempt number recorded with the event. */
  a: number;
  at: number;
  /** Worker id, reason, error, executionSeq, ... when the event carries them. */
  w?: string;
  r?: string;
  er?: string;
  x?: string;
  [field: string]: string | number | undefined;
}

/** Enqueues jobs (validated like POST /jobs) and returns their ids in order. */
export async function enqueue(t: TestStore, inputs: EnqueueInput[]): Promise<string[]> {
  const res = await t.store.enqueue(inputs.map((i) => normalizeEnqueue(i, 1_000_000)));
  return res.map((r) => r.id);
}

/** The audit events of `queue` (log lines excluded), oldest first, optionally of one job. */
export async function auditEvents(
  t: TestStore,
  queue: string,
  jobId?: string,
): Promise<AuditEvent[]> {
  const raw = await readEvents(t.redis, t.keys(queue).events);
  return raw
    .filter((e) => e.e !== 'log' && (jobId === undefined || e.j === jobId))
    .map((e) => ({ ...e, a: Number(e.a), at: Number(e.at) }) as AuditEvent);
}

/** Events grouped by job id, each list oldest first. */
export function byJob(events: AuditEvent[]): Map<string, AuditEvent[]> {
  const out = new Map<string, AuditEvent[]>();
  for (const e of events) {
    let l = out.get(e.j);
    if (!l) out.set(e.j, (l = []));
    l.push(e);
  }
  return out;
}

/**
 * The check every case makes (CASES.md): for each job, the audit trail holds
 * exactly one terminal event (completed / failed / cancelled) and it is the
 * job's last event, so no job left a terminal state afterwards. Jobs of the
 * stream that are not in `jobIds` are checked too (nothing may be
 * half-finished). Fails listing every offending job.
 */
export function expectOneTerminalEventPerJob(events: AuditEvent[], jobIds: string[]): void {
  const grouped = byJob(events);
  const problems: string[] = [];
  for (const id of new Set([...jobIds, ...grouped.keys()])) {
    const list = grouped.get(id) ?? [];
    const terminal = list.filter((e) => TERMINAL_EVENTS.has(e.e));
    const trail = list.map((e) => e.e).join(',');
    if (terminal.length !== 1)
      problems.push(`${id}: ${terminal.length} terminal events (${trail})`);
    else if (!TERMINAL_EVENTS.has(list[list.length - 1].e))
      problems.push(`${id}: trail does not end terminal (${trail})`);
  }
  expect(problems).toEqual([]);
}

/**
 * Polls `check` every `intervalMs` until it returns something other than
 * undefined / null / false, and returns that.
 * @throws Error naming `what` after `timeoutMs`.
 */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs: number,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Resolves with `p`'s value, or with `onTimeout` after `ms` (the timer is cleared either way). */
export async function within<T, U>(p: Promise<T>, ms: number, onTimeout: U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<U>((r) => (timer = setTimeout(() => r(onTimeout), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits for the first event of `jobId` in `queue` matching `match`. */
export function waitForEvent(
  t: TestStore,
  queue: string,
  jobId: string,
  match: (e: AuditEvent) => boolean,
  timeoutMs: number,
  what = 'an event',
): Promise<AuditEvent> {
  return waitUntil(
    `${what} of job ${jobId}`,
    async () => (await auditEvents(t, queue, jobId)).find(match),
    timeoutMs,
  );
}

/** Redis's clock (TIME), epoch ms: the clock the scripts stamp events with. */
export async function redisNow(redis: RedisClient): Promise<number> {
  const [s, us] = await (redis as any).time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/**
 * Starts `node dist/main.js` on the test's key prefix (REDIS_PREFIX) with
 * `env` on top of the test defaults of startSluice (ROLE=worker, diagnostic
 * handlers). Info logs stay on: some cases read them.
 */
export function startOnPrefix(
  t: TestStore,
  env: Record<string, string>,
  opts: { waitReady?: boolean } = {},
): Promise<SluiceProcess> {
  return startSluice({ REDIS_PREFIX: t.prefix, LOG_LEVEL: 'info', ...env }, opts);
}

/**
 * The worker id a process logged in its "worker started" line
 * (`<host>-<pid>-<hex>`, the `w` field of its audit events).
 */
export async function workerIdOf(p: SluiceProcess, timeoutMs = 15_000): Promise<string> {
  await p.waitFor(/"msg":"worker started"/, timeoutMs);
  for (const line of p.output().split('\n')) {
    if (line.includes('"msg":"worker started"')) return JSON.parse(line).workerId as string;
  }
  throw new Error('unreachable: worker started line not found');
}

/** One exit of a supervised process. */
export interface SupervisedExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
  output: string;
}

/**
 * A supervisor, as in production (systemd, Kubernetes): starts a process and
 * starts a new one whenever it exits, until stop(). Restarts do not wait for
 * the "started" log line, since a poison job may kill the process before it.
 */
export class Supervisor {
  readonly exits: SupervisedExit[] = [];
  readonly processes: SluiceProcess[] = [];
  private stopped = false;
  private restarting: Promise<unknown> = Promise.resolve();

  constructor(private readonly launch: (waitReady: boolean) => Promise<SluiceProcess>) {}

  /** Starts the first process and waits until it is ready. */
  async start(): Promise<SluiceProcess> {
    const p = await this.launch(true);
    this.watch(p);
    return p;
  }

  get current(): SluiceProcess | undefined {
    return this.processes[this.processes.length - 1];
  }

  private watch(p: SluiceProcess): void {
    this.processes.push(p);
    void p.exited.then(({ code, signal }) => {
      this.exits.push({ code, signal, at: Date.now(), output: p.output() });
      if (this.stopped) return;
      this.restarting = this.launch(false).then(
        (next) => (this.stopped ? killAll([next]) : this.watch(next)),
        () => undefined,
      );
    });
  }

  /** Stops restarting and kills whatever still runs. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.restarting;
    await killAll(this.processes);
  }
}
