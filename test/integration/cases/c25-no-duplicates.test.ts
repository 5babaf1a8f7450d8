/**
 * C25 (CASES.md): zero duplicates under contention.
 *
 * 10 real worker processes (ROLE=worker,scheduler: every role replicated, as
 * in production) at the default concurrency of 10 share one queue per round.
 * Each round enqueues 1,000 `diag.echo` jobs in 10 concurrent batches while
 * the workers sit blocked on the queue's wake list, so they all wake and
 * claim at once. Every job must run exactly once, checked two ways from the
 * queue's audit events stream: exactly one `claimed` event per job (no job id
 * handed to two workers), and exactly one `completed` event per job (each
 * completed exactly once, with its own payload as result). Five rounds in a
 * row, on the same processes.
 *
 * Then the same in the system of record: an in-process MirrorWriter mirrors
 * the round's stream into a fresh PostgreSQL database, and `job_executions`
 * must hold exactly one row per job (execution 1, outcome `completed`, run by
 * the worker the stream says claimed it), `job_events` exactly one
 * `completed` per job, and nothing for any other id. The writer runs after
 * the Redis checks of each round, not during it: it XDELs what it mirrors,
 * and the checks above read the stream.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { workersKey } from '../../../src/redis/keys';
import { outbox } from '../../support/mirror';
import { openTestDb, TestDb } from '../../support/postgres';
import { killAll, SluiceProcess } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import {
  auditEvents,
  byJob,
  enqueue,
  expectOneTerminalEventPerJob,
  startOnPrefix,
  waitUntil,
} from '../../support/cases';

const WORKERS = 10;
const JOBS = 1000;
const BATCHES = 10;
const ROUNDS = 5;
const queueOf = (round: number) => `c25-r${round}`;

let t: TestStore;
let db: TestDb;
let procs: SluiceProcess[] = [];
let writer: MirrorWriter | undefined;

beforeAll(async () => {
  t = await openStore('c25');
  db = await openTestDb('c25');
});
afterAll(async () => {
  await killAll(procs);
  await writer?.stop();
  await t.close();
  await db.close();
});

/**
 * Mirrors the round's stream into PostgreSQL with an in-process mirror writer
 * (drained: XLEN 0, nothing pending) and returns, per job of `queue`, its
 * job_executions rows and its count of `completed` job_events.
 */
async function mirror(queue: string, round: number) {
  writer = new MirrorWriter(t.stores, db.dataSource, { writerId: `c25-audit-r${round}`, idleMs: 20 });
  writer.start();
  await waitUntil(
    `round ${round}: the stream mirrored to PostgreSQL`,
    async () => {
      const o = await outbox(t.redis, t, [queue]);
      return o.len === 0 && o.pending === 0 ? true : undefined;
    },
    30_000,
    100,
  );
  await writer.stop();
  writer = undefined;
  const executions: { id: string; seq: number; outcome: string; worker: string | null }[] =
    await db.dataSource.query(
      `SELECT job_id::text AS id, execution_seq AS seq, outcome, worker_id AS worker FROM job_executions WHERE queue = $1`,
      [queue],
    );
  const completedEvents: { id: string; n: number }[] = await db.dataSource.query(
    `SELECT job_id::text AS id, count(*)::int AS n FROM job_timeline WHERE queue = $1 AND event = 'completed' GROUP BY job_id`,
    [queue],
  );
  return { executions, completedEvents };
}

/** Counts of `event` per job id. */
function countBy(events: { e: string; j: string }[], event: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const e of events) if (e.e === event) m.set(e.j, (m.get(e.j) ?? 0) + 1);
  return m;
}

test('C25 1,000 jobs on 10 worker processes run exactly once each, 5 rounds in a row', async () => {
  const queues = Array.from({ length: ROUNDS }, (_, i) => queueOf(i + 1));
  procs = await Promise.all(
    Array.from({ length: WORKERS }, () =>
      startOnPrefix(
        t,
        { ROLE: 'worker,scheduler', QUEUES: queues.join(','), LOG_LEVEL: 'warn' },
        { waitReady: false },
      ),
    ),
  );
  // LOG_LEVEL=warn hides the "started" lines: wait for readiness through the worker registry instead.
  await waitUntil(
    '10 registered workers',
    async () => {
      // A process that died at boot never registers: say why at once rather than time out.
      const dead = procs.find((p) => p.proc.exitCode !== null || p.proc.signalCode !== null);
      if (dead) throw new Error(`a worker process exited at boot: ${dead.output().slice(-1500)}`);
      return (await t.redis.zcard(workersKey(t.prefix))) === WORKERS ? true : undefined;
    },
    30_000,
    100,
  );
  for (const p of procs) expect(p.proc.exitCode).toBeNull();

  for (let round = 1; round <= ROUNDS; round++) {
    const queue = queueOf(round);
    const started = Date.now();
    const batches = await Promise.all(
      Array.from({ length: BATCHES }, (_, b) =>
        enqueue(
          t,
          Array.from({ length: JOBS / BATCHES }, (_, i) => ({
            queue,
            type: 'diag.echo',
            payload: { round, n: b * (JOBS / BATCHES) + i },
          })),
        ),
      ),
    );
    const ids = batches.flat();
    expect(new Set(ids).size).toBe(JOBS);

    await waitUntil(
      `round ${round}: ${JOBS} completed events`,
      async () =>
        (await auditEvents(t, queue)).filter((e) => e.e === 'completed').length >= JOBS
          ? true
          : undefined,
      30_000,
      100,
    );
    const tookMs = Date.now() - started;
    await sleep(200); // a late duplicate would show up here

    const ev = await auditEvents(t, queue);
    const claimed = countBy(ev, 'claimed');
    const completed = countBy(ev, 'completed');
    // Offending ids as `id×count`: how many, and the first ten.
    const ofIds = (m: Map<string, number>) => {
      const bad = ids.filter((id) => m.get(id) !== 1).map((id) => `${id}×${m.get(id) ?? 0}`);
      return bad.length ? `${bad.length}: ${bad.slice(0, 10).join(' ')}` : 'none';
    };
    // Way 1: no job id was claimed twice (nor left unclaimed), no unknown id claimed.
    const idSet = new Set(ids);
    expect({
      round,
      notClaimedOnce: ofIds(claimed),
      unknown: [...claimed.keys()].filter((id) => !idSet.has(id)),
    }).toEqual({
      round,
      notClaimedOnce: 'none',
      unknown: [],
    });
    // Way 2: every job completed exactly once.
    expect({ round, notCompletedOnce: ofIds(completed) }).toEqual({
      round,
      notCompletedOnce: 'none',
    });
    // Nothing stalled, released, retried or failed on the way.
    expect({ round, events: [...new Set(ev.map((e) => e.e))].sort() }).toEqual({
      round,
      events: ['claimed', 'completed', 'enqueued'],
    });
    // Each job's trail is enqueued → claimed → completed, and its result is its own payload.
    const trails = byJob(ev);
    expect(
      ids.filter(
        (id) =>
          trails
            .get(id)!
            .map((e) => e.e)
            .join() !== 'enqueued,claimed,completed',
      ),
    ).toEqual([]);
    const jobs = await Promise.all(ids.map((id) => t.store.getJob(queue, id)));
    const wrong = jobs.filter(
      (j) =>
        !j ||
        j.status !== 'completed' ||
        j.attempts !== 1 ||
        j.executionSeq !== 1 ||
        JSON.stringify(j.result) !== JSON.stringify(j.payload),
    );
    expect(wrong.map((j) => j?.id)).toEqual([]);
    expectOneTerminalEventPerJob(ev, ids);

    // There was contention: several processes claimed from the same queue.
    const claimers = new Set(ev.filter((e) => e.e === 'claimed').map((e) => e.w));
    expect(claimers.size).toBeGreaterThanOrEqual(2);

    // The system of record: one job_executions row per job (execution 1,
    // completed, by the worker that claimed it), one completed event per job.
    const { executions, completedEvents } = await mirror(queue, round);
    const claimedBy = new Map(ev.filter((e) => e.e === 'claimed').map((e) => [e.j, e.w]));
    const rowsOf = new Map<string, typeof executions>();
    for (const r of executions) rowsOf.set(r.id, [...(rowsOf.get(r.id) ?? []), r]);
    const pgCompleted = new Map(completedEvents.map((r) => [r.id, r.n]));
    expect({
      round,
      executions: executions.length,
      notOneCompletedExecution: ids.filter((id) => {
        const rows = rowsOf.get(id) ?? [];
        return (
          rows.length !== 1 ||
          rows[0].seq !== 1 ||
          rows[0].outcome !== 'completed' ||
          rows[0].worker !== claimedBy.get(id)
        );
      }),
      unknownExecutions: [...rowsOf.keys()].filter((id) => !idSet.has(id)),
      notOneCompletedEvent: ofIds(pgCompleted),
      unknownCompletedEvents: [...pgCompleted.keys()].filter((id) => !idSet.has(id)),
    }).toEqual({
      round,
      executions: JOBS,
      notOneCompletedExecution: [],
      unknownExecutions: [],
      notOneCompletedEvent: 'none',
      unknownCompletedEvents: [],
    });
    process.stdout.write(
      `C25 round ${round}: ${JOBS} jobs in ${tookMs} ms, claimed by ${claimers.size} worker processes; ` +
        `PostgreSQL: ${executions.length} executions, one per job\n`,
    );
  }
  for (const p of procs) expect(p.proc.exitCode).toBeNull();
}, 180_000);
