/**
 * Flow control per key (issue 20): a job's concurrency key reaches
 * PostgreSQL. The enqueue script writes it as the field `ck` of the job's
 * `enqueued` event (lua/enqueueJobs-5.lua); the projection carries it to
 * `jobs.concurrency_key` through both write forms (COPY for a fresh batch,
 * INSERT … unnest for a replayed one) and the history reads it back as the
 * job's `concurrencyKey`. The entries here are written as the script writes
 * them (header of lua/includes/emit.lua plus `ck`), so the test does not
 * depend on which version of the script runs.
 */
import { v7 as uuidv7 } from 'uuid';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { writeBatch } from '../../../src/mirror/batch-writer';
import { entryFields, project } from '../../../src/mirror/projection';
import { GET_JOB_SQL } from '../../../src/history/get-job';
import { rowToJob, type JobRow } from '../../../src/history/common';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('mirror-ck');
  db = await openTestDb('mirror-ck');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

const OPTIONS = '3;600000;exponential|2000|3600000|equal';
/** The flat fields of an `enqueued` entry as lua/enqueueJobs-5.lua writes it, `ck` when `key` is given. */
const enqueued = (id: string, at: number, key?: string): string[] => [
  'h', `enqueued||waiting|0|${at}|${id}|||0|${at}|${OPTIONS}`, 'ty', 'x', 'p', '{}', ...(key === undefined ? [] : ['ck', key]),
];
const readJob = async (id: string) => rowToJob(((await db.dataSource.query(GET_JOB_SQL, [id])) as JobRow[])[0]);

test('the projection takes ck of an enqueued event as concurrencyKey, null without one', () => {
  const a = uuidv7();
  const b = uuidv7();
  const batch = project([
    { queue: 'q', id: '1796000000000-0', fields: entryFields(enqueued(a, 1796000000000, 'customer-42')) },
    { queue: 'q', id: '1796000000000-1', fields: entryFields(enqueued(b, 1796000000000)) },
  ]);
  expect(batch.inserts.map((i) => [i.id, i.concurrencyKey])).toEqual([
    [a, 'customer-42'],
    [b, null],
  ]);
});

test('through the writer (COPY of a fresh batch): the key lands in jobs.concurrency_key and reads back as concurrencyKey', async () => {
  const q = 'ck-writer';
  await t.stores.queues.register(q);
  const keyed = uuidv7();
  const plain = uuidv7();
  // Characters COPY's text format must escape, and a key of 128 characters.
  const nasty = 'tab\there\\back\nline é 😀';
  const long = 'k'.repeat(128);
  const third = uuidv7();
  const now = Date.now();
  for (const [id, key] of [[keyed, nasty], [plain, undefined], [third, long]] as const) await t.redis.xadd(t.keys(q).events, '*', ...enqueued(id, now, key));
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'ck-writer' });
  await (w as unknown as { refreshOwnership(): Promise<void> }).refreshOwnership();
  while ((await w.runOnce()) > 0);
  await w.stop();
  expect(w.stats.freshRetries).toBe(0);
  const rows: { id: string; concurrency_key: string | null }[] = await db.dataSource.query(`SELECT id, concurrency_key FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id`, [[keyed, plain, third]]);
  expect(rows).toEqual([
    { id: keyed, concurrency_key: nasty },
    { id: plain, concurrency_key: null },
    { id: third, concurrency_key: long },
  ]);
  expect((await readJob(keyed)).concurrencyKey).toBe(nasty);
  expect((await readJob(plain)).concurrencyKey).toBeNull();
});

test('the idempotent form (INSERT … unnest of a replayed batch) writes it too, and a replay leaves it as it was', async () => {
  const id = uuidv7();
  const at = Date.now();
  const batch = () => project([{ queue: 'ck-replay', id: `${at}-0`, fields: entryFields(enqueued(id, at, 'acct,"7"{}')) }]);
  await writeBatch(db.dataSource, batch(), false);
  await writeBatch(db.dataSource, batch(), false);
  expect((await readJob(id)).concurrencyKey).toBe('acct,"7"{}');
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE id = $1`, [id]);
  expect(n).toBe(1);
});

test('a debounced event sets the key the update sent (null without one), by patch and folded into the insert', async () => {
  const id = uuidv7();
  const at = Date.now();
  const debounced = (ms: number, key?: string): string[] => [
    'h', `debounced|delayed|delayed|0|${ms}|${id}|||0|${ms + 60_000}|${OPTIONS}`, 'ty', 'x', 'p', '{"v":2}', ...(key === undefined ? [] : ['ck', key]),
  ];
  const write = (ms: number, flat: string[], fresh = false) => writeBatch(db.dataSource, project([{ queue: 'ck-deb', id: `${ms}-0`, fields: entryFields(flat) }]), fresh);
  await write(at, enqueued(id, at, 'first'), true);
  expect((await readJob(id)).concurrencyKey).toBe('first');
  await write(at + 1, debounced(at + 1, 'second'));
  expect((await readJob(id)).concurrencyKey).toBe('second');
  await write(at + 2, debounced(at + 2));
  expect((await readJob(id)).concurrencyKey).toBeNull();
  // An older entry delivered again changes nothing.
  await write(at + 1, debounced(at + 1, 'second'));
  expect((await readJob(id)).concurrencyKey).toBeNull();

  // Enqueued and debounced in one batch: one row, with the last key (COPY, then the idempotent form of a replay).
  const other = uuidv7();
  const both = () =>
    project([
      { queue: 'ck-deb', id: `${at}-5`, fields: entryFields(enqueued(other, at, 'a')) },
      { queue: 'ck-deb', id: `${at}-6`, fields: entryFields(['h', `debounced|delayed|delayed|0|${at}|${other}|||0|${at + 60_000}|${OPTIONS}`, 'ty', 'x', 'p', '{}', 'ck', 'b']) },
    ]);
  await writeBatch(db.dataSource, both(), true);
  expect((await readJob(other)).concurrencyKey).toBe('b');
  await writeBatch(db.dataSource, both(), false);
  expect((await readJob(other)).concurrencyKey).toBe('b');
});
