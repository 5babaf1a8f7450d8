/**
 * Debounce in the history mirror, on real Redis and a real PostgreSQL
 * database: the `debounced` events of a burst (lua/enqueueJobs-5.lua) bring
 * the job's `jobs` row to the last request's payload, type, priority,
 * options, runAt and status, whether they arrive in the enqueue's batch
 * (folded into the insert), in later batches (patches), or again (replays,
 * older batches after newer ones); each is one `job_events` row whose data
 * is the payload it set.
 */
import { DEFAULT_BACKOFF, encodeBackoff } from '../../../src/core/backoff';
import { normalizeEnqueue, type EnqueueInput, type NormalizedEnqueue } from '../../../src/core/job-options';
import type { EnqueueResult } from '../../../src/core/ports/jobs';
import { writeBatch } from '../../../src/mirror/batch-writer';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { project, type StreamEntry } from '../../../src/mirror/projection';
import { captureStreams, eventRows, expectedEventRow, msOf, outbox } from '../../support/mirror';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

jest.setTimeout(60_000);

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('mirror-debounce');
  db = await openTestDb('debounce');
});
afterAll(async () => {
  await t?.close();
  await db?.close();
});

const debJob = (input: EnqueueInput, debounce: NonNullable<NormalizedEnqueue['debounce']>, concurrencyKey?: string): NormalizedEnqueue => ({
  ...normalizeEnqueue(input, 1_000_000),
  debounce,
  ...(concurrencyKey ? { concurrencyKey } : {}),
});
async function deb(input: EnqueueInput, debounce: NonNullable<NormalizedEnqueue['debounce']>, concurrencyKey?: string): Promise<EnqueueResult> {
  return (await t.store.enqueue([debJob(input, debounce, concurrencyKey)]))[0];
}

/** Runs a real writer loop (batches of `batchSize`) until the queues' streams are mirrored. */
async function mirror(queues: string[], batchSize: number): Promise<void> {
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: `dw-${batchSize}-${Date.now()}`, batchSize, idleMs: 5 });
  w.start();
  const deadline = Date.now() + 20_000;
  try {
    for (;;) {
      const o = await outbox(t.redis, t, queues);
      if (o.len === 0 && o.pending === 0) break;
      if (Date.now() > deadline) throw new Error(`writer did not drain the streams: ${JSON.stringify(o)}`);
      await sleep(20);
    }
  } finally {
    await w.stop();
  }
}

async function row(id: string) {
  const [r] = await db.dataSource.query(`SELECT * FROM jobs WHERE id = $1`, [id]);
  return r;
}
/** The columns a debounce update sets, as PostgreSQL holds them. */
async function spec(id: string) {
  const r = await row(id);
  return {
    type: r.type, payload: r.payload, status: r.status, priority: r.priority, maxAttempts: r.max_attempts, timeoutMs: r.timeout_ms,
    backoff: r.backoff, runAt: msOf(r.run_at), createdAt: msOf(r.created_at), attempts: r.attempts,
  };
}

const BACKOFF = { type: 'fixed' as const, delayMs: 5, maxDelayMs: 5, jitter: 'none' as const };

/**
 * A burst of 6 on one key: options, type and priority change along the way; the last request
 * sends no options (the defaults come back). Returns the job's id and what its row must hold.
 */
async function burst(queue: string) {
  const d = { key: 'doc:1', windowMs: 60_000 };
  const first = await deb({ queue, type: 'index.v1', payload: { n: 0 }, priority: 5, maxAttempts: 7, timeoutMs: 1000, backoff: BACKOFF }, d, 'tenant-a');
  for (let n = 1; n < 5; n++) await deb({ queue, type: 'index.v1', payload: { n }, priority: 5 + n, maxAttempts: 7 }, d, 'tenant-a');
  const last = await deb({ queue, type: 'index.v2', payload: { n: 5, last: true } }, d);
  expect(last.id).toBe(first.id);
  expect(last.debounced).toBe(true);
  return {
    id: first.id,
    want: {
      type: 'index.v2', payload: '{"n":5,"last":true}', status: 'delayed', priority: 0, maxAttempts: 3, timeoutMs: 600_000,
      backoff: encodeBackoff(DEFAULT_BACKOFF), runAt: last.created!.runAt, createdAt: first.created!.createdAt, attempts: 0,
    },
  };
}

describe('the writer loop', () => {
  it.each([
    ['one event per batch: the insert, then a patch per update', 'dm-one', 1],
    ['the whole burst in one batch: the updates folded into the insert', 'dm-all', 100],
  ])('%s', async (_, queue, batchSize) => {
    const { id, want } = await burst(queue);
    const entries = await captureStreams(t.redis, t, [queue]);
    expect(entries.map((e) => e.fields.e)).toEqual(['enqueued', 'debounced', 'debounced', 'debounced', 'debounced', 'debounced']);
    await mirror([queue], batchSize);
    expect(await spec(id)).toEqual(want);
    // One job_events row per entry, field for field; a debounced row's data is the payload it set.
    const rows = await eventRows(db.dataSource, [id]);
    expect(rows).toEqual(entries.map(expectedEventRow));
    expect(rows.map((r) => [r.event, r.from_status, r.to_status, r.data && JSON.parse(r.data).n])).toEqual([
      ['enqueued', null, 'delayed', 0],
      ...[1, 2, 3, 4, 5].map((n) => ['debounced', 'delayed', 'delayed', n]),
    ]);
  });

  it('a debounced job made due, claimed and completed: the row follows, with the last payload', async () => {
    const queue = 'dm-run';
    const d = { key: 'k', windowMs: 100, maxWaitMs: 100 };
    const a = await deb({ queue, type: 'x', payload: { v: 1 } }, d);
    await mirror([queue], 10);
    expect((await spec(a.id)).status).toBe('delayed');
    await sleep(150);
    // maxWaitMs is over: the update makes it due at once (debounced delayed → waiting).
    const b = await deb({ queue, type: 'x', payload: { v: 2 } }, d);
    expect([b.id, b.status]).toEqual([a.id, 'waiting']);
    await mirror([queue], 10);
    expect(await spec(a.id)).toMatchObject({ status: 'waiting', payload: '{"v":2}', runAt: b.created!.runAt });
    const c = await t.store.claim(queue, 1, 30_000, 'w');
    expect(c.jobs.map((j) => [j.id, j.payload])).toEqual([[a.id, { v: 2 }]]);
    await t.store.complete(queue, 'w', [{ id: a.id, lockToken: c.jobs[0].lockToken, result: 'ok' }]);
    await mirror([queue], 10);
    const r = await row(a.id);
    expect([r.status, r.payload, r.attempts, r.result]).toEqual(['completed', '{"v":2}', 1, '"ok"']);
    const events = (await eventRows(db.dataSource, [a.id])).map((e) => `${e.event}:${e.from_status ?? ''}>${e.to_status}`);
    expect(events).toEqual(['enqueued:>delayed', 'debounced:delayed>waiting', 'claimed:waiting>active', 'completed:active>completed']);
  });
});

describe('replays (writeBatch, not fresh)', () => {
  let id: string;
  let want: Awaited<ReturnType<typeof burst>>['want'];
  let entries: StreamEntry[];
  const write = (batch: StreamEntry[]) => db.dataSource.transaction((m) => writeBatch(m, project(batch)));
  const wipe = async () => {
    await db.dataSource.query(`DELETE FROM job_events WHERE job_id = $1`, [id]);
    await db.dataSource.query(`DELETE FROM jobs WHERE id = $1`, [id]);
  };

  beforeAll(async () => {
    ({ id, want } = await burst('dm-replay'));
    entries = await captureStreams(t.redis, t, ['dm-replay']);
  });

  it('the insert row carrying folded updates brings an existing older row forward (upsert), and an older batch again changes nothing', async () => {
    await wipe();
    await write(entries.slice(0, 1));
    expect(await spec(id)).toMatchObject({ type: 'index.v1', payload: '{"n":0}', priority: 5, maxAttempts: 7, timeoutMs: 1000 });
    // The whole stream again: the enqueued event with every update folded in, over the existing row.
    await write(entries);
    expect(await spec(id)).toEqual(want);
    await write(entries.slice(0, 3));
    expect(await spec(id)).toEqual(want);
    expect(await eventRows(db.dataSource, [id])).toEqual(entries.map(expectedEventRow));
  });

  it('updates in later batches are patches; the patches of an older batch never undo a newer one', async () => {
    await wipe();
    await write(entries.slice(0, 1));
    await write(entries.slice(1, 3));
    expect(await spec(id)).toMatchObject({ type: 'index.v1', payload: '{"n":2}', priority: 7, maxAttempts: 7, timeoutMs: 600_000 });
    await write(entries.slice(3));
    expect(await spec(id)).toEqual(want);
    await write(entries.slice(1, 3));
    expect(await spec(id)).toEqual(want);
    expect(await eventRows(db.dataSource, [id])).toEqual(entries.map(expectedEventRow));
  });
});
