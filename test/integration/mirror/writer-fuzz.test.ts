/**
 * Fuzz: the history mirror never stops, whatever the events streams hold.
 * Real Redis, real PostgreSQL, the writer's own loop (read-ahead and all).
 * Random and hostile entries are written straight into two queues' events
 * streams — numbers huge, negative, 1e19, NaN; NUL, lone surrogates,
 * invalid UTF-8 bytes; missing fields, unknown event and status names,
 * empty or short headers, extra and repeated fields, huge strings, types
 * too long for an index — interleaved with the events of valid jobs run
 * through the store (enqueue, claim, progress + log, complete, fail).
 * Checks: every valid job ends fully mirrored (its events in order, its row
 * in its final state, its logs), every hostile entry is either written or
 * quarantined (exactly one of the two), no valid entry is quarantined, the
 * streams drain to empty, and the writer still mirrors new jobs afterwards.
 *
 * Seeded: FUZZ_SEED=<n> replays a run; the seed is printed on failure.
 * FUZZ_ROUNDS=<n> runs longer (default 40).
 */
import { randomInt } from 'node:crypto';
import { Registry } from 'prom-client';
import { MirrorMetrics } from '../../../src/mirror/mirror-metrics';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { outbox } from '../../support/mirror';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';
import { waitUntil } from '../../support/redis-server';
import { rng } from '../../support/rng';

jest.setTimeout(180_000);

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : randomInt(2 ** 31);
const ROUNDS = Number(process.env.FUZZ_ROUNDS ?? 40);
const QUEUES = ['fz-a', 'fz-b'];

const rnd = rng(SEED);
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)];
const chance = (p: number) => rnd() < p;

/** A UUIDv7-shaped id from the PRNG (hostile job ids never meet a valid job's). */
function uuid(): string {
  const h = Array.from({ length: 32 }, () => '0123456789abcdef'[int(0, 15)]).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20)}`;
}
function randomText(n: number, from: number, span: number): string {
  const codes = new Uint16Array(n);
  for (let i = 0; i < n; i++) codes[i] = from + int(0, span);
  return Buffer.from(codes.buffer).toString('utf16le');
}
const huge = () => (chance(0.5) ? 'x'.repeat(int(100_000, 1_500_000)) : randomText(int(20_000, 200_000), 0x20, 0x5e));

const EVENTS = ['enqueued', 'promoted', 'claimed', 'heartbeat_lost', 'progress', 'completed', 'retry_scheduled', 'failed', 'stalled', 'released', 'cancelled', 'cancel_requested', 'retried_from_dlq', 'purged'];
const BAD_EVENTS = ['log', 'bogus', '', 'ENQUEUED', 'claimed ', 'complete\u0000d', '\ud800'];
const STATUSES = ['waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled', ''];
const BAD_STATUSES = ['gone', 'WAITING', ' active', 'nul\u0000'];
const NUMBERS = ['0', '1', '2', '-1', '3.5', '-0', '1e3'];
const BAD_NUMBERS = ['1e19', '-1e19', '9223372036854775807', '-9223372036854775808', '99999999999', '2147483648', 'NaN', 'Infinity', '1e400', '0x10', ' 12 ', 'abc', '1e308', '١٢'];
const BAD_TIMES = ['1e19', '-1e19', '-210866803200001', '8.64e15', '253402300800000', '1e16', '9.3e15', 'NaN', '', '-0', '0x5', '1e400'];
const BAD_IDS = ['not-a-uuid', '', '00000000-0000-0000-0000-00000000000g', 'ZZZZZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZZZZZZZZZ', '\ud800', 'nul\u0000', '{}', '$sluice$'];
const TEXTS = ['', 'plain', 'with\u0000nul', 'lone\ud800surrogate', '\udc00', '$sluice$', '$$', '"quotes" and \\ back\\slashes', 'tab\tnew\nline\r', '{}', '{"a":1}', 'a|b|c', '\\N', 'ünï©ødé 🚀'];
const EXTRA_NAMES = ['p', 'ty', 'o', 'd', 'er', 'w', 'r', 'ik', 'lvl', 'm', 'zz', '__proto__', 'constructor', '', 'h', 'e', 'j', 'at'];

const text = (): string | Buffer => {
  const r = rnd();
  if (r < 0.05) return huge();
  if (r < 0.1) return Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80, int(0, 255), 0x00, 0x41]); // invalid UTF-8, NUL
  if (r < 0.15) return randomText(int(1, 50), 0xd000, 0x2fff); // surrogate range: lone ones included
  return pick(TEXTS);
};
const hostileOrNot = <T>(good: () => T, bad: () => T, p: number) => (chance(p) ? bad() : good());

/**
 * One hostile entry's field list. Most are close to real ones (a header of
 * the right shape with a bad part or two, so many reach PostgreSQL and its
 * type checks), the others anything at all.
 */
function hostileEntry(now: number): (string | Buffer)[] {
  const shape = rnd();
  if (shape < 0.6) {
    const p = 0.12;
    const parts = [
      hostileOrNot(() => pick(EVENTS), () => pick(BAD_EVENTS), p / 2),
      hostileOrNot(() => pick(STATUSES), () => pick(BAD_STATUSES), p / 3),
      hostileOrNot(() => pick(STATUSES.slice(0, 6)), () => pick(BAD_STATUSES), p / 3),
      hostileOrNot(() => pick(NUMBERS), () => pick(BAD_NUMBERS), p),
      hostileOrNot(() => String(now + int(-1000, 1000)), () => pick(BAD_TIMES), p),
      hostileOrNot(uuid, () => pick(BAD_IDS), p / 2),
      hostileOrNot(() => (chance(0.5) ? '' : pick(NUMBERS)), () => pick(BAD_NUMBERS), p), // x
      hostileOrNot(() => (chance(0.5) ? '' : pick(NUMBERS)), () => pick(BAD_NUMBERS), p), // ms
      hostileOrNot(() => (chance(0.7) ? '' : pick(NUMBERS)), () => pick(BAD_NUMBERS), p), // pr
      hostileOrNot(() => (chance(0.7) ? '' : String(now + int(0, 1e6))), () => pick([...BAD_NUMBERS, ...BAD_TIMES]), p), // ra
      hostileOrNot(() => (chance(0.5) ? '' : '3;600000;exponential|2000|3600000|equal'), () => pick(['', ';;', 'x;y;z', '1e19;-1;', '3']), p),
    ];
    const fields: (string | Buffer)[] = ['h', parts.slice(0, chance(0.1) ? int(1, 10) : 11).join('|')];
    if (parts[0] === 'enqueued' && chance(0.3)) fields.push('ty', randomText(int(3000, 6000), 0x4e00, 0x51ff)); // an index row too large (54000)
    for (let i = int(0, 4); i > 0; i--) fields.push(pick(EXTRA_NAMES), text());
    return fields;
  }
  if (shape < 0.68) return ['e', hostileOrNot(() => 'log', () => pick(BAD_EVENTS), 0.3), 'j', hostileOrNot(uuid, () => pick(BAD_IDS), 0.3), 'a', pick([...NUMBERS, ...BAD_NUMBERS]), 'at', hostileOrNot(() => String(now), () => pick(BAD_TIMES), 0.3), 'lvl', text(), 'm', text()];
  if (shape < 0.72) return ['h', ''];
  if (shape < 0.76) return ['h', text(), 'h', text()];
  const out: (string | Buffer)[] = [];
  for (let i = int(1, 6); i > 0; i--) out.push(chance(0.8) ? pick(EXTRA_NAMES) : text(), text());
  return out;
}

interface ValidJob {
  id: string;
  queue: string;
  events: string[];
  logs: number;
  status: string;
  token?: string;
}

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-fuzz');
  db = await openTestDb('fuzz');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

test(`hostile entries among valid jobs' events: the mirror never stops (seed ${SEED})`, async () => {
  const lines: { level: string; msg: string; o: object }[] = [];
  const at = (level: string) => (o: object, msg: string) => void lines.push({ level, msg, o });
  const log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  const metrics = new MirrorMetrics(new Registry());
  let w: MirrorWriter | undefined;
  try {
    const jobs = new Map<string, ValidJob>();
    const hostile: { queue: string; id: string }[] = [];
    const enqueue = async (queue: string, n: number) => {
      const rs = await t.store.enqueue(Array.from({ length: n }, (_, i) => normalizeEnqueue({ type: 'fz', queue, payload: { i, s: pick(TEXTS) } }, 1e6)));
      for (const r of rs) jobs.set(r.id, { id: r.id, queue, events: ['enqueued'], logs: 0, status: 'waiting' });
    };
    for (const q of QUEUES) await enqueue(q, 1); // registers the queues
    const batchSize = pick([7, 64, 1000]);
    w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'fuzz-w', batchSize, metrics, idleMs: 2 }, log);
    w.start();

    for (let round = 0; round < ROUNDS; round++) {
      const now = Date.now();
      for (let op = int(3, 12); op > 0; op--) {
        const q = pick(QUEUES);
        const r = rnd();
        if (r < 0.35) {
          await enqueue(q, int(1, 8));
        } else if (r < 0.55) {
          const { jobs: claimed } = await t.store.claim(q, int(1, 5), 60_000, 'fz-worker');
          for (const c of claimed) {
            const j = jobs.get(c.id)!;
            j.events.push('claimed');
            j.status = 'active';
            j.token = c.lockToken;
          }
        } else {
          const active = [...jobs.values()].filter((j) => j.status === 'active' && j.queue === q);
          if (!active.length) continue;
          const j = pick(active);
          const how = rnd();
          if (how < 0.3) {
            await t.store.progress(q, j.id, j.token!, 'fz-worker', { p: int(0, 100) }, [{ level: 'info', message: String(pick(TEXTS)) }]);
            j.events.push('progress');
            j.logs++;
          } else if (how < 0.75) {
            await t.store.complete(q, 'fz-worker', [{ id: j.id, lockToken: j.token!, result: { ok: pick(TEXTS) } }]);
            j.events.push('completed');
            j.status = 'completed';
          } else {
            await t.store.fail(q, j.id, j.token!, { error: String(pick(TEXTS)), retryable: false, delayMs: 0, reason: 'error', workerId: 'fz-worker' });
            j.events.push('failed');
            j.status = 'failed';
          }
        }
        for (let h = int(0, 3); h > 0; h--) {
          const id = (await (t.redis as any).xadd(t.keys(q).events, '*', ...hostileEntry(now))) as string;
          hostile.push({ queue: q, id });
        }
      }
      if (chance(0.5)) await sleep(int(0, 25));
    }

    await waitUntil(
      'the streams drained',
      async () => {
        const o = await outbox(t.redis, t, QUEUES);
        return o.len === 0 && o.pending === 0;
      },
      120_000,
      50,
    );

    // Every valid job fully mirrored: its events in order, its row, its logs.
    const ids = [...jobs.keys()];
    const evRows: { job_id: string; evs: string[] }[] = await db.dataSource.query(
      `SELECT job_id::text, array_agg(event ORDER BY stream_ms, stream_seq) AS evs FROM job_timeline WHERE job_id = ANY($1::uuid[]) GROUP BY job_id`,
      [ids],
    );
    const evs = new Map(evRows.map((r) => [r.job_id, r.evs]));
    const rows: { id: string; status: string }[] = await db.dataSource.query(`SELECT id::text, status FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
    const status = new Map(rows.map((r) => [r.id, r.status]));
    const logRows: { job_id: string; n: number }[] = await db.dataSource.query(
      `SELECT job_id::text, count(*)::int AS n FROM job_logs WHERE job_id = ANY($1::uuid[]) GROUP BY job_id`,
      [ids],
    );
    const logs = new Map(logRows.map((r) => [r.job_id, r.n]));
    const wrong: string[] = [];
    for (const j of jobs.values()) {
      const got = { events: evs.get(j.id) ?? [], status: status.get(j.id), logs: logs.get(j.id) ?? 0 };
      if (JSON.stringify(got) !== JSON.stringify({ events: j.events, status: j.status, logs: j.logs })) wrong.push(`${j.id}: ${JSON.stringify(got)} want ${JSON.stringify(j)}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);

    // Every hostile entry written (one event or log row) or quarantined: exactly one of the two.
    const keyOf = (queue: string, id: string) => `${queue} ${id}`;
    const written = new Set<string>();
    for (const table of ['job_timeline', 'job_logs']) {
      const r: { queue: string; id: string }[] = await db.dataSource.query(`SELECT queue, stream_ms || '-' || stream_seq AS id FROM ${table} WHERE queue = ANY($1)`, [QUEUES]);
      for (const x of r) written.add(keyOf(x.queue, x.id));
    }
    const qRows: { queue: string; entry_id: string; error_code: string }[] = await db.dataSource.query(`SELECT queue, entry_id, error_code FROM audit_quarantine`);
    const quarantined = new Set(qRows.map((r) => keyOf(r.queue, r.entry_id)));
    const hostileKeys = new Set(hostile.map((h) => keyOf(h.queue, h.id)));
    const neither = hostile.filter((h) => !written.has(keyOf(h.queue, h.id)) && !quarantined.has(keyOf(h.queue, h.id)));
    const both = hostile.filter((h) => written.has(keyOf(h.queue, h.id)) && quarantined.has(keyOf(h.queue, h.id)));
    expect(neither).toEqual([]);
    expect(both).toEqual([]);
    expect([...quarantined].filter((k) => !hostileKeys.has(k))).toEqual([]); // no valid entry quarantined
    expect(await metrics.registry.getSingleMetricAsString('sluice_audit_quarantined_entries_total')).toMatch(new RegExp(` ${quarantined.size}$`, 'm'));

    // Still alive: a job enqueued now is mirrored.
    const [late] = await t.store.enqueue([normalizeEnqueue({ type: 'fz', queue: QUEUES[0] }, 1e6)]);
    await waitUntil('a late job mirrored', async () => (await db.dataSource.query(`SELECT 1 FROM jobs WHERE id = $1`, [late.id])).length === 1, 20_000, 20);
    expect(lines.filter((l) => l.msg === 'audit writer loop crashed')).toEqual([]);

    const codes: Record<string, number> = {};
    for (const r of qRows) codes[r.error_code] = (codes[r.error_code] ?? 0) + 1;
    console.log(
      `fuzz seed ${SEED}, batch size ${batchSize}: ${jobs.size} valid jobs, ${hostile.length} hostile entries: ` +
        `${hostile.length - quarantined.size} written, ${quarantined.size} quarantined ${JSON.stringify(codes)}; ` +
        `${w.stats.batches} batches, ${w.stats.isolated} bisected`,
    );
  } catch (e) {
    (e as Error).message = `FUZZ_SEED=${SEED}: ${(e as Error).message}`;
    console.error(`fuzz failed with FUZZ_SEED=${SEED}`);
    throw e;
  } finally {
    await w?.stop();
  }
});
