/**
 * The mirror writer isolates what PostgreSQL refuses (src/mirror/mirror-writer.ts,
 * src/mirror/quarantine.ts), on real Redis and PostgreSQL: a batch refused for
 * its data is bisected, the rest written in stream order, the refused entries
 * quarantined in `audit_quarantine` and acknowledged like written ones, so one
 * entry can never stop the mirror. Entries the projection cannot read are
 * quarantined without a round trip. Log lines carry ids and SQLSTATEs, never
 * values. (PostgreSQL going away never quarantines: quarantine-outage.test.ts.)
 */
import { Registry } from 'prom-client';
import { MirrorMetrics } from '../../../src/mirror/mirror-metrics';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { LIMITS, normalizeEnqueue } from '../../../src/core/job-options';
import { openTestDb, TestDb, v7At } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  db = await openTestDb('quarantine');
});
afterAll(async () => {
  await db.close();
});
// A prefix per test: the writer of a test owns that test's queue alone (a batch is shared among the queues it owns).
beforeEach(async () => {
  t = await openStore('audit-quarantine');
});
afterEach(async () => {
  await t.close();
});

/** A log that keeps every line (to check what reaches it). */
function recorder() {
  const lines: { level: string; msg: string; o: Record<string, unknown> }[] = [];
  const at = (level: string) => (o: Record<string, unknown>, msg: string) => void lines.push({ level, msg, o });
  const log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { lines, log };
}

/** Appends one entry straight to a queue's events stream; returns its id. */
async function xadd(queue: string, fields: (string | Buffer)[]): Promise<string> {
  return (await (t.redis as any).xadd(t.keys(queue).events, '*', ...fields)) as string;
}

/** The header of an entry (lua/includes/emit.lua): event|from|to|attempt|at|jobId|x|ms|pr|ra|o. */
const header = (p: { e: string; f?: string; t?: string; a?: string; at?: string; j: string; x?: string; ms?: string; pr?: string; ra?: string; o?: string }) =>
  [p.e, p.f ?? '', p.t ?? '', p.a ?? '0', p.at ?? String(Date.now()), p.j, p.x ?? '', p.ms ?? '', p.pr ?? '', p.ra ?? '', p.o ?? ''].join('|');

async function writerFor(queue: string, name: string, batchSize = 1000, maxEntryChars?: number) {
  const metrics = new MirrorMetrics(new Registry());
  const { lines, log } = recorder();
  // The queue must be registered (enqueue does it) for the writer to take it; delayed, so no claim takes it.
  await t.store.enqueue([normalizeEnqueue({ type: 'x', queue, runAt: Date.now() + 86_400_000 }, 1e6)]);
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: name, batchSize, metrics, maxEntryChars }, log as any);
  await (w as any).refreshOwnership();
  return { w, metrics, lines };
}

const quarantined = async (queue: string) =>
  (await db.dataSource.query(
    `SELECT entry_id, error_code, error_message, fields FROM audit_quarantine WHERE stream_key = $1 ORDER BY quarantined_at, entry_id`,
    [t.keys(queue).events],
  )) as { entry_id: string; error_code: string; error_message: string; fields: Record<string, unknown> }[];

const eventCount = async (queue: string) => (await db.dataSource.query(`SELECT count(*)::int AS n FROM job_timeline WHERE queue = $1`, [queue]))[0].n as number;

async function drain(w: MirrorWriter): Promise<number> {
  let n = 0;
  for (let k; (k = await w.runOnce()) > 0; ) n += k;
  return n;
}

/**
 * Enqueues, claims and fails a job with a retry backoff of 1e19 ms (the reproduction of the
 * overflow). Returns the job's id and the retry_scheduled entry the engine appended.
 */
async function failWithHugeBackoff(q: string): Promise<{ id: string; entryId: string; fields: string[]; at: number }> {
  const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'diag.fail', queue: q, payload: { times: 1 } }, 1e6)]);
  const { jobs } = await t.store.claim(q, 1, 5000, 'w1');
  expect(await t.store.fail(q, r.id, jobs[0].lockToken, { error: 'boom', retryable: true, delayMs: 1e19, reason: 'error', workerId: 'w1' })).toBe('delayed');
  const [[entryId, fields]] = (await t.redis.xrevrange(t.keys(q).events, '+', '-', 'COUNT', 1)) as [string, string[]][];
  const h = fields[fields.indexOf('h') + 1].split('|');
  expect(h.slice(0, 3)).toEqual(['retry_scheduled', 'active', 'delayed']);
  return { id: r.id, entryId, fields, at: Number(h[4]) };
}

test('a retry whose runAt overflows, as the scripts wrote it before the Lua clamps, is quarantined; the job and the stream go on', async () => {
  const q = 'qa-repro';
  const { w, metrics, lines } = await writerFor(q, 'qa-repro');
  const { id, entryId, fields, at } = await failWithHugeBackoff(q);
  // The entry as failJob wrote it before lua/includes/clamp.lua: runAt = int(now + delay) computed by
  // Redis's Lua itself, which overflows '%d' (an older version's stream, or a restored one, still holds such entries).
  const overflowed = String(await t.redis.eval(`return string.format('%d', tonumber(ARGV[1]) + tonumber(ARGV[2]))`, 0, String(at), '1e19'));
  expect(Math.abs(Number(overflowed))).toBeGreaterThan(8.64e15); // past any PostgreSQL timestamp
  const h = fields[fields.indexOf('h') + 1].split('|');
  h[h.length - 1] = overflowed;
  const hostile = [...fields];
  hostile[fields.indexOf('h') + 1] = h.join('|');
  expect(await t.redis.xdel(t.keys(q).events, entryId)).toBe(1);
  await xadd(q, hostile);
  const [other] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
  await drain(w);
  await w.stop();
  expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
  const qs = await quarantined(q);
  expect(qs.map((x) => x.error_code)).toEqual(['22008']);
  expect(String(qs[0].fields.h)).toBe(h.join('|'));
  const evs = await db.dataSource.query(`SELECT event FROM job_timeline WHERE job_id = $1 ORDER BY stream_ms, stream_seq`, [id]);
  expect(evs.map((e: { event: string }) => e.event)).toEqual(['enqueued', 'claimed']);
  expect((await db.dataSource.query(`SELECT status FROM jobs WHERE id = $1`, [other.id]))[0].status).toBe('waiting');
  expect(await metrics.registry.getSingleMetricAsString('sluice_audit_quarantined_entries_total')).toMatch(/^sluice_audit_quarantined_entries_total 1$/m);
  const warn = lines.find((l) => l.msg === 'audit writer: entries quarantined');
  expect(warn?.o).toMatchObject({ count: 1, streamKey: t.keys(q).events, codes: { '22008': 1 } });
});

test('the same retry through today\'s engine neither overflows nor is quarantined: its runAt is clamped to one year ahead and mirrored', async () => {
  const q = 'qa-clamped';
  const { w } = await writerFor(q, 'qa-clamped');
  const { id, fields, at } = await failWithHugeBackoff(q);
  const ra = Number(fields[fields.indexOf('h') + 1].split('|').pop());
  expect(ra - at).toBe(LIMITS.maxDelayMs);
  await drain(w);
  await w.stop();
  expect(await quarantined(q)).toEqual([]);
  expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
  const evs = await db.dataSource.query(`SELECT event FROM job_timeline WHERE job_id = $1 ORDER BY stream_ms, stream_seq`, [id]);
  expect(evs.map((e: { event: string }) => e.event)).toEqual(['enqueued', 'claimed', 'retry_scheduled']);
  const [job] = await db.dataSource.query(`SELECT status, run_at FROM jobs WHERE id = $1`, [id]);
  expect([job.status, (job.run_at as Date).getTime()]).toEqual(['delayed', at + LIMITS.maxDelayMs]);
});

test('one bad entry in a batch of 1,000: 999 written, 1 quarantined, in one read', async () => {
  const q = 'qa-one';
  const { w } = await writerFor(q, 'qa-one');
  const first = await t.store.enqueue(Array.from({ length: 499 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)));
  const bad = await xadd(q, ['h', header({ e: 'enqueued', t: 'waiting', j: 'not-a-uuid', o: '1;1000;' }), 'ty', 'x', 'p', '{}']);
  const rest = await t.store.enqueue(Array.from({ length: 499 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)));
  // The registering enqueue, 499, the bad one, 499: one batch of 1,000.
  expect(await w.runOnce()).toBe(1000);
  await w.stop();
  expect(await eventCount(q)).toBe(999);
  const qs = await quarantined(q);
  expect(qs.map((x) => [x.entry_id, x.error_code])).toEqual([[bad, '22P02']]);
  const ids = [...first, ...rest].map((r) => r.id);
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
  expect(n).toBe(998);
  expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
});

test('a batch whose every entry is bad: all quarantined, the stream drained', async () => {
  const q = 'qa-all';
  const { w } = await writerFor(q, 'qa-all');
  await drain(w); // the registering enqueue
  const bad: string[] = [];
  for (let i = 0; i < 40; i++) {
    // Refused by PostgreSQL in different ways: a bad uuid, an int out of range, a time out of range.
    const j = v7At(Date.now());
    const kind = i % 3;
    const h =
      kind === 0
        ? header({ e: 'promoted', f: 'delayed', t: 'waiting', j: `bad-${i}` })
        : kind === 1
          ? header({ e: 'claimed', f: 'waiting', t: 'active', a: '99999999999', j, x: '1' })
          : header({ e: 'cancelled', f: 'waiting', t: 'cancelled', at: '1e19', j });
    bad.push(await xadd(q, ['h', h]));
  }
  expect(await w.runOnce()).toBe(40);
  await w.stop();
  expect(await eventCount(q)).toBe(1);
  const qs = await quarantined(q);
  expect(qs.map((x) => x.entry_id).sort()).toEqual([...bad].sort());
  expect(new Set(qs.map((x) => x.error_code))).toEqual(new Set(['22P02', '22003', '22008']));
  expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
});

test("a bad entry in the middle of a job's events: its later events of the same batch are written, in order", async () => {
  const q = 'qa-mid';
  const { w } = await writerFor(q, 'qa-mid');
  await drain(w);
  const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q, payload: { n: 1 } }, 1e6)]);
  const { jobs } = await t.store.claim(q, 1, 5000, 'w1');
  // A progress event whose executionSeq is past int: refused in job_events and in the jobs row it folds into.
  const bad = await xadd(q, ['h', header({ e: 'progress', f: 'active', t: 'active', a: '1', j: r.id, x: '99999999999' }), 'd', '{"p":1}']);
  await t.store.progress(q, r.id, jobs[0].lockToken, 'w1', { p: 2 }, [{ level: 'info', message: 'half way' }]);
  await t.store.complete(q, 'w1', [{ id: r.id, lockToken: jobs[0].lockToken, result: { ok: true } }]);
  expect(await w.runOnce()).toBe(6);
  await w.stop();
  const evs = await db.dataSource.query(`SELECT event FROM job_timeline WHERE job_id = $1 ORDER BY stream_ms, stream_seq`, [r.id]);
  expect(evs.map((e: { event: string }) => e.event)).toEqual(['enqueued', 'claimed', 'progress', 'completed']);
  const [job] = await db.dataSource.query(`SELECT status, result, progress, attempts FROM jobs WHERE id = $1`, [r.id]);
  expect(job).toEqual({ status: 'completed', result: '{"ok":true}', progress: '{"p":2}', attempts: 1 });
  const [ex] = await db.dataSource.query(`SELECT outcome FROM job_executions WHERE job_id = $1`, [r.id]);
  expect(ex.outcome).toBe('completed');
  expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM job_logs WHERE job_id = $1`, [r.id]))[0].n).toBe(1);
  expect((await quarantined(q)).map((x) => x.entry_id)).toEqual([bad]);
  expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
});

test('entries the projection cannot read are quarantined, not dropped nor written as garbage', async () => {
  const q = 'qa-parse';
  const { w, metrics } = await writerFor(q, 'qa-parse');
  await drain(w);
  const j = v7At(Date.now());
  const bad = [
    await xadd(q, ['h', header({ e: 'no_such_event', f: 'waiting', t: 'active', j })]),
    await xadd(q, ['h', header({ e: 'claimed', f: 'waiting', t: 'active', a: 'many', j, x: '1' })]),
    await xadd(q, ['h', header({ e: 'claimed', f: 'waiting', t: 'active', at: 'NaN', j, x: '1' })]),
    await xadd(q, ['h', header({ e: 'promoted', f: 'delayed', t: 'nowhere', j })]),
    await xadd(q, ['h', '']),
    await xadd(q, ['zz', 'top']),
    await xadd(q, ['e', 'log', 'j', j, 'a', '1', 'at', 'soon', 'lvl', 'info', 'm', 'x']),
  ];
  const good = await xadd(q, ['h', header({ e: 'promoted', f: 'delayed', t: 'waiting', j })]);
  expect(await w.runOnce()).toBe(8);
  await w.stop();
  const qs = await quarantined(q);
  expect(qs.map((x) => x.entry_id).sort()).toEqual([...bad].sort());
  for (const x of qs) expect(x.error_code).toBe('projection');
  expect((await db.dataSource.query(`SELECT event FROM job_timeline WHERE queue = $1 AND job_id = $2`, [q, j])).map((e: any) => e.event)).toEqual(['promoted']);
  expect(good).toBeDefined();
  expect(await metrics.registry.getSingleMetricAsString('sluice_audit_quarantined_entries_total')).toMatch(/ 7$/m);
});

test('raw fields are stored whatever they hold (NUL, invalid UTF-8, lone surrogates), and no value reaches a log', async () => {
  const q = 'qa-raw';
  const { w, lines } = await writerFor(q, 'qa-raw');
  await drain(w);
  const secret = 'SECRET-VALUE-4242';
  const id = await xadd(q, [
    'h', header({ e: 'enqueued', t: 'waiting', j: `${secret}`, o: '1;1000;' }),
    'p', `{"k":"${secret}\u0000\ud800"}`,
    'bin', Buffer.from([0xff, 0xfe, 0x00, 0x41]),
  ]);
  expect(await w.runOnce()).toBe(1);
  await w.stop();
  const [row] = await quarantined(q);
  expect(row.entry_id).toBe(id);
  expect(row.error_code).toBe('22P02');
  expect(row.error_message).toContain(secret); // the table keeps PostgreSQL's whole message
  // Text PostgreSQL can hold goes in as it is; the rest as its bytes (base64).
  expect(row.fields.h).toContain(secret);
  expect(row.fields.bin).toEqual({ base64: Buffer.from([0xff, 0xfe, 0x00, 0x41]).toString('base64') });
  expect(Buffer.from((row.fields.p as { base64: string }).base64, 'base64').toString('utf8')).toBe(`{"k":"${secret}\u0000\ufffd"}`);
  const logged = JSON.stringify(lines);
  expect(logged).toContain(id);
  expect(logged).not.toContain(secret);
});

test('an entry past maxEntryChars is quarantined unwritten, its neighbours written', async () => {
  const q = 'qa-huge';
  const { w } = await writerFor(q, 'qa-huge', 1000, 10_000);
  await drain(w);
  const [a] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
  const big = await xadd(q, ['h', header({ e: 'promoted', f: 'delayed', t: 'waiting', j: a.id }), 'd', 'y'.repeat(20_000)]);
  const [b] = await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
  expect(await drain(w)).toBe(3);
  await w.stop();
  const [row] = await quarantined(q);
  expect([row.entry_id, row.error_code, row.error_message]).toEqual([big, 'projection', 'entry too large']);
  expect(row.fields.d).toBe('y'.repeat(20_000));
  const rows = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[])`, [[a.id, b.id]]);
  expect(rows[0].n).toBe(2);
});

describe('an unclassified SQLSTATE (a trigger raising P0001)', () => {
  const trigger = async (when: string) => {
    await db.dataSource.query(`CREATE OR REPLACE FUNCTION qa_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF ${when} THEN RAISE EXCEPTION 'poisoned: %', NEW.reason; END IF; RETURN NEW; END $$`);
    await db.dataSource.query(`CREATE TRIGGER qa_poison BEFORE INSERT ON job_events FOR EACH ROW EXECUTE FUNCTION qa_poison()`);
  };
  afterEach(async () => {
    await db.dataSource.query(`DROP TRIGGER IF EXISTS qa_poison ON job_events`);
  });

  test('is taken as the data only once the same batch failed with it 3 times, and then only the entry it refuses alone', async () => {
    const q = 'qa-unknown';
    const { w } = await writerFor(q, 'qa-unknown');
    await drain(w);
    await trigger(`NEW.reason = 'poison'`);
    const j = v7At(Date.now());
    await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
    const bad = await xadd(q, ['h', header({ e: 'promoted', f: 'delayed', t: 'waiting', j }), 'r', 'poison']);
    await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
    await expect(w.runOnce()).rejects.toMatchObject({ code: 'P0001' });
    await expect(w.runOnce()).rejects.toMatchObject({ code: 'P0001' });
    expect(w.stats.bisections).toBe(0);
    expect(await w.runOnce()).toBe(3);
    await w.stop();
    expect((await quarantined(q)).map((x) => [x.entry_id, x.error_code])).toEqual([[bad, 'P0001']]);
    expect(await eventCount(q)).toBe(3);
  });

  test('is never taken as the data when no entry of the batch goes in (PostgreSQL refusing everything)', async () => {
    const q = 'qa-unknown-all';
    const { w } = await writerFor(q, 'qa-unknown-all');
    await drain(w);
    await trigger('true');
    await t.store.enqueue(Array.from({ length: 5 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)));
    for (let i = 0; i < 5; i++) await expect(w.runOnce()).rejects.toMatchObject({ code: 'P0001' });
    expect(w.stats.bisections).toBeGreaterThan(0);
    expect(await quarantined(q)).toEqual([]);
    expect(await t.redis.xlen(t.keys(q).events)).toBe(5);
    await db.dataSource.query(`DROP TRIGGER qa_poison ON job_events`);
    expect(await drain(w)).toBe(5);
    await w.stop();
    expect(await eventCount(q)).toBe(6);
  });
});
