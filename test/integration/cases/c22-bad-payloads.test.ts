import Redis from 'ioredis';
import { Json } from '../../../src/core/job';
import { normalizeEnqueue, PayloadTooLargeError } from '../../../src/core/job-options';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import { events, waitUntil, workerIdOf } from '../../support/timing';

/**
 * C22 — Bad payloads never poison the queue (CASES.md), the Redis/worker
 * side: lone UTF-16 surrogates round-trip byte for byte through Redis and a
 * worker; oversize payloads are refused before they reach Redis; job hashes
 * corrupted by hand go to the DLQ with a decode error while the same worker
 * process goes on with the jobs behind them.
 */
const MAX = 524288;

let t: TestStore;
const procs: (SluiceProcess | undefined)[] = [];

beforeAll(async () => {
  t = await openStore('c22');
});
afterEach(async () => killAll(procs.splice(0)));
afterAll(async () => t.close());

async function enqueue(queue: string, payload: Record<string, Json>, extra: { delayMs?: number } = {}): Promise<string> {
  const [r] = await t.store.enqueue([normalizeEnqueue({ queue, type: 'diag.echo', payload, ...extra }, MAX)]);
  return r.id;
}

/** The stored payload bytes of a job (its chunks p0..pN concatenated). */
async function storedPayload(queue: string, id: string): Promise<Buffer> {
  const h = await (t.redis as Redis).hgetallBuffer(`${t.keys(queue).base}job:${id}`);
  const chunks = Object.keys(h).filter((f) => /^p\d+$/.test(f)).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  return Buffer.concat(chunks.map((f) => h[f]));
}

test('C22: a payload with lone UTF-16 surrogates is stored and returned byte for byte and does not crash a worker', async () => {
  const q = 'c22s';
  const payload = { lone: '\ud800', low: 'a\udc00b', broken: '😀\ud83d', long: '\udbff'.repeat(40) + 'x' };
  const json = JSON.stringify(payload);
  expect(json).toContain('\\ud800'); // JSON.stringify escapes lone surrogates: the stored form is ASCII
  expect(normalizeEnqueue({ queue: q, type: 'diag.echo', payload }, MAX).payloadJson).toBe(json);

  const id = await enqueue(q, payload);
  expect((await storedPayload(q, id)).equals(Buffer.from(json, 'utf8'))).toBe(true);
  const stored = await t.store.getJob(q, id);
  expect(stored!.payload).toEqual(payload);
  expect(JSON.stringify(stored!.payload)).toBe(json);
  expect((await events(t.redis, t.keys(q).events, id))[0].p).toBe(json);

  const p = await startSluice({ REDIS_PREFIX: t.prefix, QUEUES: q });
  procs.push(p);
  await workerIdOf(p);
  await waitUntil('echo completed', async () => (await t.store.getJob(q, id))?.status === 'completed', 10000);
  const done = await t.store.getJob(q, id);
  expect(done!.result).toEqual(payload);
  expect(JSON.stringify(done!.result)).toBe(json);
  expect(JSON.stringify(done!.payload)).toBe(json);
  // The worker is still alive and still serving the queue.
  const next = await enqueue(q, { after: true });
  await waitUntil('next job completed', async () => (await t.store.getJob(q, next))?.status === 'completed', 10000);
  expect(p.proc.exitCode).toBeNull();
}, 30000);

test('C22: a payload over MAX_PAYLOAD_BYTES (bytes, not characters) is refused with PayloadTooLargeError; one at the limit round-trips', async () => {
  const over = (payload: Record<string, Json>) => () => normalizeEnqueue({ type: 'diag.echo', payload }, MAX);
  expect(over({ blob: 'x'.repeat(10 * 1024 * 1024) })).toThrow(PayloadTooLargeError);
  try {
    over({ blob: 'x'.repeat(10 * 1024 * 1024) })();
  } catch (e) {
    expect(e).toMatchObject({ code: 'payload_too_large', limitBytes: MAX });
  }
  const frame = JSON.stringify({ blob: '' }).length; // {"blob":""}
  expect(over({ blob: 'x'.repeat(MAX - frame + 1) })).toThrow(PayloadTooLargeError);
  // 'é' is 2 bytes in UTF-8: fewer characters than the limit, more bytes.
  expect(over({ blob: 'é'.repeat((MAX - frame) / 2 + 1) })).toThrow(PayloadTooLargeError);
  // Each escaped lone surrogate is 6 bytes (\udXXX).
  expect(over({ blob: '\ud800'.repeat(Math.floor((MAX - frame) / 6) + 1) })).toThrow(PayloadTooLargeError);

  const atLimit = { blob: 'y'.repeat(MAX - frame) };
  expect(Buffer.byteLength(JSON.stringify(atLimit))).toBe(MAX);
  const id = await enqueue('c22big', atLimit);
  expect((await t.store.getJob('c22big', id))!.payload).toEqual(atLimit);
});

type Corruption = { name: string; apply: (r: Redis, key: string) => Promise<unknown> };
const CORRUPTIONS: Corruption[] = [
  { name: "garbage in 's'", apply: (r, k) => r.hset(k, 's', 'z\u0000garbage') },
  { name: "'ty' missing", apply: (r, k) => r.hdel(k, 'ty') },
  { name: "payload chunk 'p0' not JSON", apply: (r, k) => r.hset(k, 'p0', '{"half": ') },
  { name: 'key replaced by a string', apply: async (r, k) => r.multi().del(k).set(k, 'not a hash').exec() },
];

test('C22: job hashes corrupted by hand go to the DLQ with a decode error while the same worker keeps processing', async () => {
  const q = 'c22c';
  const k = t.keys(q);
  const r = t.redis as Redis;
  // Concurrency 1: a corrupt job must not stall the worker until its idle poll either.
  const p = await startSluice({ REDIS_PREFIX: t.prefix, QUEUES: q, WORKER_CONCURRENCY: '1' });
  procs.push(p);
  const workerId = await workerIdOf(p);

  // Paused while we corrupt, so the worker cannot take the victims first.
  await t.stores.queues.configure(q, { paused: true });
  const victims: { id: string; name: string }[] = [];
  for (const c of CORRUPTIONS) {
    for (const delayMs of [undefined, 700]) {
      const id = await enqueue(q, { victim: c.name }, { delayMs });
      await c.apply(r, `${k.base}job:${id}`);
      victims.push({ id, name: `${c.name}${delayMs ? ' (delayed)' : ''}` });
    }
  }
  const good: string[] = [];
  for (let i = 0; i < 5; i++) good.push(await enqueue(q, { good: i }));
  const resumedAt = Date.now();
  await t.stores.queues.configure(q, { paused: false });

  await waitUntil('good jobs completed', async () => {
    const jobs = await Promise.all(good.map((id) => t.store.getJob(q, id)));
    return jobs.every((j) => j?.status === 'completed');
  }, 10000);
  // The corrupt jobs ahead of them cost no idle-poll stalls.
  expect(Date.now() - resumedAt).toBeLessThan(2500);
  await waitUntil('victims dead-lettered', async () => (await r.zcard(k.failed)) === victims.length, 5000);

  for (const v of victims) {
    const [s, e] = await r.hmget(`${k.base}job:${v.id}`, 's', 'e');
    expect({ victim: v.name, s, decodeError: e?.startsWith('decode error') }).toEqual({ victim: v.name, s: 'failed', decodeError: true });
    expect(await r.zscore(k.failed, v.id)).not.toBeNull();
    for (const set of [k.waiting, k.delayed, k.active]) expect(await r.zscore(set, v.id)).toBeNull();
    const ev = await events(t.redis, k.events, v.id);
    const terminal = ev.filter((x) => ['completed', 'failed', 'cancelled'].includes(x.e));
    expect({ victim: v.name, terminal: terminal.map((x) => `${x.e}:${x.r}`) }).toEqual({ victim: v.name, terminal: ['failed:decode_error'] });
  }

  // The same process, still alive, goes on with jobs enqueued after all this.
  const more: string[] = [];
  for (let i = 0; i < 3; i++) more.push(await enqueue(q, { more: i }));
  await waitUntil('later jobs completed', async () => {
    const jobs = await Promise.all(more.map((id) => t.store.getJob(q, id)));
    return jobs.every((j) => j?.status === 'completed');
  }, 5000);
  for (const id of [...good, ...more]) expect((await t.store.getJob(q, id))!.workerId).toBe(workerId);
  await sleep(100);
  expect(p.proc.exitCode).toBeNull();
  expect(p.output()).not.toMatch(/worker loop crashed/);
}, 30000);
