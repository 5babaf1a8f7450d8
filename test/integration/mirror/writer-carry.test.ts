/**
 * The mirror writer holds a job's trailing `claimed` for the next batch
 * (MirrorWriter.withCarry, src/mirror/mirror-writer.ts), on real Redis and
 * PostgreSQL: a short job claimed just before a paced batch's read and
 * completed just after it is still written with one `jobs` update (its
 * claimed and completed fold, the execution goes in whole); a job that stays
 * active is written by the very next batch all the same; nothing is lost or
 * doubled.
 */
import * as batchWriter from '../../../src/mirror/batch-writer';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import type { MirrorBatch, StreamEntry } from '../../../src/mirror/projection';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { MIRROR_GROUP } from '../../../src/redis/keys';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-carry');
  db = await openTestDb('carry');
});
afterAll(async () => {
  jest.restoreAllMocks();
  await t.close();
  await db.close();
});

/** Every batch the writer plans, as the projection handed to planBatch. */
const planned: MirrorBatch[] = [];
/** Reads from the streams and batches planned, in order; `claim`: the job whose `claimed` it holds. */
const log: { kind: 'read' | 'plan'; claim?: string }[] = [];
beforeEach(() => {
  planned.length = 0;
  log.length = 0;
  const real = batchWriter.planBatch;
  jest.spyOn(batchWriter, 'planBatch').mockImplementation((b, fresh) => {
    planned.push(b);
    log.push({ kind: 'plan', claim: b.events.find((e) => e.event === 'claimed')?.jobId });
    return real(b, fresh);
  });
});

/** Logs each read of the writer (one per batch: every owned stream at once), with the job whose `claimed` it brought. */
function logReads(w: MirrorWriter): void {
  const read = (w as any).read.bind(w) as () => Promise<StreamEntry[]>;
  (w as any).read = async () => {
    const r = await read();
    log.push({ kind: 'read', claim: r.find((e) => e.fields.e === 'claimed')?.fields.j });
    return r;
  };
}
afterEach(() => jest.restoreAllMocks());

/** Batches this far apart: a completion comes 0–60 ms after its claim, so a stall of ~340 ms would be needed to split one. */
const PACE_MS = 400;

test('short jobs straddling a paced batch boundary: one jobs update each, whole executions, every event mirrored once', async () => {
  const q = 'carry-short';
  await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]); // the queue exists before the writer looks
  const first = (await t.store.claim(q, 1, 30_000, 'w1')).jobs[0];
  await t.store.complete(q, 'w1', [
    { id: first.id, lockToken: first.lockToken, result: undefined },
  ]);
  const w = new MirrorWriter(t.stores, db.dataSource, {
    writerId: 'carry-w',
    batchPaceMs: PACE_MS,
    idleMs: 1,
  });
  w.start();
  const ids: string[] = [first.id];
  try {
    await sleep(300); // taken over
    // Jobs one after another for 3 s, each completed 0–60 ms after its claim:
    // with batches 400 ms apart, about one in thirteen is claimed before a read
    // and completed after it.
    const until = Date.now() + 3000;
    while (Date.now() < until) {
      const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
      const j = (await t.store.claim(q, 1, 30_000, 'w1')).jobs[0];
      expect(j.id).toBe(r.id);
      await sleep(Math.random() * 60);
      await t.store.complete(q, 'w1', [
        { id: j.id, lockToken: j.lockToken, result: { i: ids.length } },
      ]);
      ids.push(j.id);
    }
    for (let i = 0; i < 100 && (await t.redis.xlen(t.keys(q).events)) > 0; i++) await sleep(20);
    expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
  } finally {
    await w.stop();
  }
  // Each job's claimed and completed went to PostgreSQL in one batch (so one row write of the job and a whole execution).
  const batchOf = (id: string, event: string) =>
    planned.findIndex((b) => b.events.some((e) => e.jobId === id && e.event === event));
  const straddled = ids.filter((id) => batchOf(id, 'claimed') !== batchOf(id, 'completed'));
  expect({ jobs: ids.length > 20, straddled }).toEqual({ jobs: true, straddled: [] });
  // Folded, the execution started and finished arrives whole: no execution is started in one batch and ended in another.
  const starts = new Set(planned.flatMap((b) => b.starts.map((s) => s.jobId)));
  expect(ids.filter((id) => starts.has(id))).toEqual([]);
  // The history is whole: three events each, in order, once; one whole execution; the row completed.
  const rows: { id: string; evs: string[]; status: string; outcome: string; n: number }[] =
    await db.dataSource.query(
      `SELECT j.id::text, j.status, (SELECT array_agg(e.event ORDER BY e.stream_ms, e.stream_seq) FROM job_timeline e WHERE e.job_id = j.id) AS evs,
            x.outcome, (SELECT count(*)::int FROM job_executions y WHERE y.job_id = j.id) AS n
     FROM jobs j LEFT JOIN job_executions x ON x.job_id = j.id WHERE j.id = ANY($1::uuid[])`,
      [ids],
    );
  expect(rows).toHaveLength(ids.length);
  for (const r of rows)
    expect({ id: r.id, evs: r.evs, status: r.status, outcome: r.outcome, n: r.n }).toEqual({
      id: r.id,
      evs: ['enqueued', 'claimed', 'completed'],
      status: 'completed',
      outcome: 'completed',
      n: 1,
    });
  const [pending] = (await t.redis.xpending(t.keys(q).events, MIRROR_GROUP)) as [number];
  expect(pending).toBe(0);
});

test('a job that stays active: its held claimed is written by the next batch, nothing else arriving', async () => {
  const q = 'carry-long';
  await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
  const w = new MirrorWriter(t.stores, db.dataSource, {
    writerId: 'carry-long-w',
    batchPaceMs: PACE_MS,
    idleMs: 1,
  });
  logReads(w);
  w.start();
  try {
    await sleep(300);
    const j = (await t.store.claim(q, 1, 30_000, 'w1')).jobs[0];
    const t0 = Date.now();
    let status = '';
    while (Date.now() - t0 < 5000) {
      const [row] = await db.dataSource.query(`SELECT status FROM jobs WHERE id = $1`, [j.id]);
      status = row?.status;
      if (status === 'active') break;
      await sleep(10);
    }
    // Read within one pace, held once, written by the next read (≤ one more pace): with slack for a slow machine.
    expect({ status, withinMs: Date.now() - t0 < 4 * PACE_MS + 500 }).toEqual({
      status: 'active',
      withinMs: true,
    });
    // It was held: the batch planned right after the read that brought it did not hold it; the one after the next read did.
    const readIdx = log.findIndex((l) => l.kind === 'read' && l.claim === j.id);
    const planIdx = log.findIndex((l) => l.kind === 'plan' && l.claim === j.id);
    expect({ readIdx: readIdx >= 0, planIdx: planIdx > readIdx }).toEqual({
      readIdx: true,
      planIdx: true,
    });
    expect(log.slice(readIdx + 1, planIdx).some((l) => l.kind === 'read')).toBe(true);
    expect(
      planned.filter((b) => b.events.some((e) => e.jobId === j.id && e.event === 'claimed')),
    ).toHaveLength(1);
    await t.store.complete(q, 'w1', [{ id: j.id, lockToken: j.lockToken, result: undefined }]);
    for (let i = 0; i < 100 && (await t.redis.xlen(t.keys(q).events)) > 0; i++) await sleep(20);
  } finally {
    await w.stop();
  }
  const [pending] = (await t.redis.xpending(t.keys(q).events, MIRROR_GROUP)) as [number];
  expect(pending).toBe(0);
});

test('batches stay within batchSize: a read of nothing but trailing claims, and reads over several queues', async () => {
  const B = 10;
  const [qa, qb, qc] = ['carry-size-a', 'carry-size-b', 'carry-size-c'];
  // A: B jobs claimed (each claim its job's last entry), then one more job; B and C: 7 jobs each.
  await t.store.enqueue(
    Array.from({ length: B }, () => normalizeEnqueue({ type: 'x', queue: qa }, 1e6)),
  );
  expect((await t.store.claim(qa, B, 30_000, 'w1')).jobs).toHaveLength(B);
  await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: qa }, 1e6)]);
  for (const q of [qb, qc])
    await t.store.enqueue(
      Array.from({ length: 7 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)),
    );
  const acked: number[] = [];
  const ack = t.stores.mirror.ack.bind(t.stores.mirror);
  jest.spyOn(t.stores.mirror, 'ack').mockImplementation(async (q, ids) => {
    acked.push(ids.length);
    return ack(q, ids);
  });
  const w = new MirrorWriter(t.stores, db.dataSource, {
    writerId: 'carry-size-w',
    batchSize: B,
    batchPaceMs: 50,
    idleMs: 1,
  });
  // The writer owns only these three queues.
  const list = t.stores.queues.list.bind(t.stores.queues);
  jest
    .spyOn(t.stores.queues, 'list')
    .mockImplementation(async () => (await list()).filter((q) => q.startsWith('carry-size-')));
  w.start();
  try {
    for (let i = 0; i < 200; i++) {
      const left = await Promise.all([qa, qb, qc].map((q) => t.redis.xlen(t.keys(q).events)));
      if (left.every((n) => n === 0)) break;
      await sleep(20);
    }
  } finally {
    await w.stop();
  }
  const sizes = planned.map((b) => b.events.length);
  expect({ largest: Math.max(...sizes) <= B, acked: Math.max(...acked) <= B }).toEqual({
    largest: true,
    acked: true,
  });
  // Every entry written once, none left pending.
  expect(sizes.reduce((a, b) => a + b, 0)).toBe(2 * B + 1 + 14);
  for (const q of [qa, qb, qc]) {
    expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
    const [pending] = (await t.redis.xpending(t.keys(q).events, MIRROR_GROUP)) as [number];
    expect(pending).toBe(0);
  }
});
