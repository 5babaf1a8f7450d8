/**
 * The mirror writer's own encoding (src/postgres/pg-array.ts, batchScript in
 * src/mirror/batch-writer.ts) on real PostgreSQL and Redis: any text a client
 * or handler can produce reaches the mirror unchanged, a NUL character
 * cannot stall the writer, and a batch script is all-or-nothing.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { batchMessage, batchScript, planBatch } from '../../../src/mirror/batch-writer';
import { copyNumber, copyText, copyTime } from '../../../src/postgres/copy-text';
import { createDataSource } from '../../../src/postgres/data-source';
import { numArray, textArray } from '../../../src/postgres/pg-array';
import { sendBatch } from '../../../src/postgres/pg-batch';
import { project } from '../../../src/mirror/projection';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { captureStreams } from '../../support/mirror';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-encoding');
  db = await openTestDb('encoding');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

/** Strings that break naive array-literal or dollar-quote encoders. */
const NASTY = [
  '',
  'NULL',
  'null',
  '"',
  '\\',
  '\\"',
  '{a,b}',
  '}',
  ',',
  '  padded  ',
  'line\nbreak\ttab\r',
  "it's",
  'é ✓ 🚀',
  '$sluice$',
  'ends with $sluice',
  '$sluice0$ and $sluice$ and $$',
  '$1 $2::text[]',
];

async function roundTrip(literal: string, type: string): Promise<unknown[]> {
  const [row] = await db.dataSource.query(`SELECT $1::${type} AS a`, [literal]);
  return row.a;
}

describe('array literals', () => {
  test('text[]: every string comes back as it was, null as NULL (never the string "NULL")', async () => {
    const values = [...NASTY, null];
    expect(await roundTrip(textArray(values), 'text[]')).toEqual(values);
  });

  test('a NUL character (PostgreSQL text cannot hold it) becomes U+FFFD instead of failing the statement', async () => {
    expect(await roundTrip(textArray(['a\u0000b', '\u0000']), 'text[]')).toEqual(['a\uFFFDb', '\uFFFD']);
  });

  test('numbers: integers, floats and bigint strings pass; null, NaN, Infinity and non-digits become NULL', async () => {
    expect(await roundTrip(numArray([0, -3, 2 ** 40, null, undefined, NaN, Infinity]), 'float8[]')).toEqual([0, -3, 2 ** 40, null, null, null, null]);
    expect(await roundTrip(numArray(['1796010048706', '23', '12abc', '']), 'bigint[]')).toEqual(['1796010048706', '23', null, null]);
  });

  test('the plain path (nothing null, nothing to escape: joined as is) and the mixed one agree, empty arrays included', async () => {
    const plain = ['a', '', 'b c', 'é ✓ 😀', '{}', 'x,y', "it's"];
    expect(textArray(plain)).toBe('{"a","","b c","é ✓ 😀","{}","x,y","it\'s"}');
    expect(await roundTrip(textArray(plain), 'text[]')).toEqual(plain);
    // One element that must be escaped, or one null, anywhere: every other element still quoted.
    expect(await roundTrip(textArray([...plain, 'q"']), 'text[]')).toEqual([...plain, 'q"']);
    expect(await roundTrip(textArray([null, ...plain]), 'text[]')).toEqual([null, ...plain]);
    expect(textArray([])).toBe('{}');
    expect(await roundTrip(textArray([]), 'text[]')).toEqual([]);
    expect(numArray([])).toBe('{}');
    expect(numArray([1, 2.5, '7'])).toBe('{1,2.5,7}');
    expect(numArray([1, NaN, '7'])).toBe('{1,NULL,7}');
  });
});

describe('COPY rows (fresh batches)', () => {
  /** Sends `rows` through a real COPY into a temp table of one text, one float8 and one timestamptz column; returns what PostgreSQL stored. */
  async function copyRoundTrip(rows: { t: string | null; n: number | string | null; at: number | null }[]) {
    return db.dataSource.transaction(async (m) => {
      await m.query(`CREATE TEMP TABLE ct (i int, t text, n float8, at timestamptz) ON COMMIT DROP`);
      const data = rows.map((r, i) => `${i}\t${copyText(r.t)}\t${copyNumber(r.n)}\t${copyTime(r.at)}\n`).join('');
      await sendBatch(m, batchMessage([{ sql: 'COPY ct (i, t, n, at) FROM STDIN', params: [], copy: data }]));
      return (await m.query(`SELECT t, n, round(extract(epoch FROM at) * 1000)::float8 AS at FROM ct ORDER BY i`)) as { t: string | null; n: number | null; at: number | null }[];
    });
  }

  test('text: every string comes back as it was (tabs, newlines, backslashes, \\N and \\. included), null as NULL, NUL as U+FFFD', async () => {
    const values = [...NASTY, '\\N', '\\.', 'a\tb', '\\', 'trailing\\', null];
    const got = await copyRoundTrip(values.map((t) => ({ t, n: 1, at: 0 })));
    expect(got.map((r) => r.t)).toEqual(values);
    expect((await copyRoundTrip([{ t: 'a\u0000b', n: 1, at: 0 }]))[0].t).toBe('a\uFFFDb');
  });

  test('numbers and times: finite values exact, anything else NULL (as in the array literals)', async () => {
    const at = Date.parse('2026-12-01T10:00:00.123Z');
    const got = await copyRoundTrip([
      { t: 'a', n: 2 ** 40, at },
      { t: 'b', n: '1796010048706', at: at + 1 },
      { t: 'c', n: NaN, at: NaN },
      { t: 'd', n: '12abc', at: 9e15 },
      { t: 'e', n: -2.5, at: null },
      // runAt may lie anywhere up to the end of the Date range, past year 9999; years before 1 (never made by the engine) as BC, down to PostgreSQL's first day.
      { t: 'f', n: 0, at: 253_402_300_800_000 },
      { t: 'g', n: 0, at: 8.64e15 },
      { t: 'h', n: 0, at: -62_167_219_200_000 },
      { t: 'i', n: 0, at: -210_866_803_200_000 },
      { t: 'j', n: 0, at: -210_866_803_200_001 },
    ]);
    expect(got.slice(5)).toEqual([
      { t: 'f', n: 0, at: 253_402_300_800_000 },
      { t: 'g', n: 0, at: 8.64e15 },
      { t: 'h', n: 0, at: -62_167_219_200_000 },
      { t: 'i', n: 0, at: -210_866_803_200_000 },
      { t: 'j', n: 0, at: null },
    ]);
    expect(got.slice(0, 5)).toEqual([
      { t: 'a', n: 2 ** 40, at },
      { t: 'b', n: 1796010048706, at: at + 1 },
      { t: 'c', n: null, at: null },
      { t: 'd', n: null, at: null },
      { t: 'e', n: -2.5, at: null },
    ]);
  });

  test('a batch failing before, inside or after its COPY statements writes nothing and leaves the connection usable', async () => {
    const q = 'enc-copy';
    const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
    const plan = planBatch(project(await captureStreams(t.redis, t, [q])), true);
    expect(plan.filter((s) => s.copy !== undefined).map((s) => s.sql.split(' (')[0])).toEqual(['COPY job_events', 'COPY jobs']);
    const bad = { sql: 'SELECT 1 / 0', params: [] };
    // One connection, so a later statement runs behind the stray COPY data of a failed one.
    const one = await openTestDb('encoding-one');
    const pool = createDataSource(one.url, 1);
    try {
      await pool.initialize();
      await pool.query(`SELECT 1`);
      for (const broken of [[bad, ...plan], [plan[0], bad, plan[1]], [...plan, bad]]) {
        await expect(sendBatch(pool, batchMessage(broken))).rejects.toThrow(/division by zero/);
        expect((await pool.query(`SELECT count(*)::int AS n FROM job_timeline WHERE job_id = $1`, [r.id]))[0].n).toBe(0);
        expect((await pool.query(`SELECT count(*)::int AS n FROM jobs WHERE id = $1`, [r.id]))[0].n).toBe(0);
      }
      await sendBatch(pool, batchMessage(plan));
      expect((await pool.query(`SELECT count(*)::int AS n FROM job_timeline WHERE job_id = $1`, [r.id]))[0].n).toBe(1);
      // Written again fresh: the duplicate key refuses the whole batch (the writer then falls back to the idempotent form).
      await expect(sendBatch(pool, batchMessage(plan))).rejects.toMatchObject({ code: '23505' });
      expect((await pool.query(`SELECT status FROM jobs WHERE id = $1`, [r.id]))[0].status).toBe('waiting');
    } finally {
      await pool.destroy();
      await one.close();
    }
  });
});

describe('through the writer', () => {
  test('payloads, errors and log lines with quotes, backslashes, braces and dollar tags are mirrored byte for byte', async () => {
    const q = 'enc-a';
    const text = NASTY.join('|');
    const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q, payload: { text } }, 1e6)]);
    const { jobs } = await t.store.claim(q, 1, 5000, 'w1');
    await t.store.progress(q, r.id, jobs[0].lockToken, 'w1', { text }, [{ level: 'info', message: text }]);
    expect(await t.store.fail(q, r.id, jobs[0].lockToken, { error: text, retryable: false, delayMs: 0, reason: 'error', workerId: 'w1' })).toBe('failed');
    const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'enc-a' });
    await (w as any).refreshOwnership();
    while ((await w.runOnce()) > 0);
    await w.stop();

    const [job] = await db.dataSource.query(`SELECT payload, last_error, progress, status FROM jobs WHERE id = $1`, [r.id]);
    expect(job).toEqual({ payload: JSON.stringify({ text }), last_error: text, progress: JSON.stringify({ text }), status: 'failed' });
    const [failed] = await db.dataSource.query(`SELECT error FROM job_timeline WHERE job_id = $1 AND event = 'failed'`, [r.id]);
    expect(failed.error).toBe(text);
    const [log] = await db.dataSource.query(`SELECT message FROM job_logs WHERE job_id = $1`, [r.id]);
    expect(log.message).toBe(text);
    const [dlq] = await db.dataSource.query(`SELECT last_error FROM dead_letter_jobs WHERE job_id = $1`, [r.id]);
    expect(dlq.last_error).toBe(text);
  });

  test("a patch column no job of the batch sets goes as '{}' (unnest pads it with NULLs); one every patch sets to null still clears it", async () => {
    const q = 'enc-none';
    const rs = await t.store.enqueue([0, 1, 2].map((i) => normalizeEnqueue({ type: 'x', queue: q, payload: { i } }, 1e6)));
    const { jobs } = await t.store.claim(q, 3, 5000, 'w1');
    for (const j of jobs) await t.store.fail(q, j.id, j.lockToken, { error: 'boom', retryable: false, delayMs: 0, reason: 'error', workerId: 'w1' });
    const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'enc-none' });
    await (w as any).refreshOwnership();
    while ((await w.runOnce()) > 0);
    const rows = async () =>
      db.dataSource.query(`SELECT status, finished_at IS NULL AS unfinished, last_error, result, payload FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id`, [
        rs.map((r) => r.id),
      ]);
    expect(await rows()).toEqual([0, 1, 2].map((i) => ({ status: 'failed', unfinished: false, last_error: 'boom', result: null, payload: JSON.stringify({ i }) })));
    // Retried from the DLQ: every patch sets finished_at (and result) to null, and none sets last_error, progress or the spec columns.
    const t0 = await captureStreams(t.redis, t, [q]);
    for (const r of rs) await t.stores.deadLetters.retry(q, r.id);
    const retries = project((await captureStreams(t.redis, t, [q])).filter((e) => !t0.some((o) => o.id === e.id))).patches;
    expect(retries.map((p) => p.finishedAt)).toEqual([null, null, null]);
    const update = planBatch({ ...project([]), patches: retries }).find((st) => st.sql.startsWith('UPDATE jobs'))!;
    expect(update.params.filter((p) => p === '{}').length).toBeGreaterThanOrEqual(10);
    expect(update.params.slice(0, 5)).not.toContain('{}'); // ids, masks, stream ids, updated_at: one per row
    while ((await w.runOnce()) > 0);
    await w.stop();
    expect(await rows()).toEqual([0, 1, 2].map((i) => ({ status: 'waiting', unfinished: true, last_error: 'boom', result: null, payload: JSON.stringify({ i }) })));
  });

  test('a runAt past year 9999 goes in with the fresh batch (COPY), not after a refusal', async () => {
    const q = 'enc-far';
    const runAt = 3e14; // year 11,476
    const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q, runAt }, 1e6)]);
    const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'enc-far' });
    await (w as any).refreshOwnership();
    while ((await w.runOnce()) > 0);
    await w.stop();
    expect(w.stats.freshRetries).toBe(0);
    const [job] = await db.dataSource.query(`SELECT status, round(extract(epoch FROM run_at) * 1000)::float8 AS ra FROM jobs WHERE id = $1`, [r.id]);
    expect(job).toEqual({ status: 'delayed', ra: runAt });
  });

  test('an error message with a NUL character is mirrored (as U+FFFD) and the writer goes on', async () => {
    const q = 'enc-b';
    const [a, b] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6), normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
    const { jobs } = await t.store.claim(q, 2, 5000, 'w1');
    const token = (id: string) => jobs.find((j) => j.id === id)!.lockToken;
    await t.store.fail(q, a.id, token(a.id), { error: 'bad\u0000byte', retryable: false, delayMs: 0, reason: 'error', workerId: 'w1' });
    await t.store.complete(q, 'w1', [{ id: b.id, lockToken: token(b.id), result: { ok: true } }]);
    const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'enc-b' });
    await (w as any).refreshOwnership();
    expect(await w.runOnce()).toBe(6);
    await w.stop();
    const rows = await db.dataSource.query(`SELECT id::text, status, last_error FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id`, [[a.id, b.id]]);
    expect(rows).toEqual([
      { id: a.id, status: 'failed', last_error: 'bad\uFFFDbyte' },
      { id: b.id, status: 'completed', last_error: null },
    ]);
    expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
  });
});

describe('batchScript', () => {
  test('is one transaction: a failing statement leaves nothing of the ones before it', async () => {
    const q = 'enc-c';
    const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
    const plan = planBatch(project(await captureStreams(t.redis, t, [q])));
    expect(plan[0].sql).toMatch(/^INSERT INTO job_events/);
    const broken = [...plan, { sql: 'INSERT INTO job_executions (job_id) SELECT unnest($1::uuid[])', params: [textArray(['not-a-uuid'])] }];
    await expect(db.dataSource.query(batchScript(broken))).rejects.toThrow(/uuid/);
    const count = async () => Number((await db.dataSource.query(`SELECT count(*) AS n FROM job_timeline WHERE job_id = $1`, [r.id]))[0].n);
    expect(await count()).toBe(0);
    expect((await db.dataSource.query(`SELECT 1 FROM jobs WHERE id = $1`, [r.id])).length).toBe(0);
    // The same plan without the bad statement commits, and written twice adds nothing.
    await db.dataSource.query(batchScript(plan));
    await db.dataSource.query(batchScript(plan));
    expect(await count()).toBe(1);
    // The join settings were transaction-local.
    expect((await db.dataSource.query('SHOW enable_hashjoin'))[0].enable_hashjoin).toBe('on');
  });

  test('refuses a parameter that is not an array literal, or holds the tag (textArray never does: it escapes every $)', () => {
    expect(() => batchScript([{ sql: 'SELECT $1::text', params: ['x$sluice'] }])).toThrow(/not an array literal/);
    expect(() => batchScript([{ sql: 'SELECT $1::text[]', params: ['{"$sluice$"}'] }])).toThrow(/holds the tag/);
    expect(textArray(['$sluice$', 'a$'])).toBe('{"\\$sluice\\$","a\\$"}');
  });
});
