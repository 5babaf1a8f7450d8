import { EnqueueInput, normalizeEnqueue } from '../../src/core/job-options';
import { TRANSITIONS } from '../../src/core/job-status';
import { redisNow as redisNowOf } from './cases';
import { readEvents, sleep, TestStore } from './redis';

/**
 * Helpers for the Lua script tests (test/integration/scripts): each test uses
 * its own queue, so sets and events are its own. The ones that need the
 * file's store come from {@link scriptHelpers}; the pure ones are exported
 * as they are.
 */

/** A stream entry as `[event, from, to, attempt]`. */
export const efta = (evs: Record<string, string>[]) => evs.map((e) => [e.e, e.f, e.t, Number(e.a)]);

/** Ids of a claim result, in order. */
export const ids = (r: { jobs: { id: string }[] }) => r.jobs.map((j) => j.id);

/** Each event's (from, to, event) must be a row of TRANSITIONS (log lines skipped; progress keeps the state). */
export function expectLegal(evs: Record<string, string>[]): void {
  for (const e of evs) {
    if (e.e === 'log') continue;
    if (e.e === 'progress') {
      expect(e.f).toBe(e.t);
      continue;
    }
    const from = e.f === '' ? null : e.f;
    expect({ e: e.e, f: from, t: e.t, ok: TRANSITIONS.some((x) => x.event === e.e && x.from === from && x.to === e.t) }).toEqual({ e: e.e, f: from, t: e.t, ok: true });
  }
}

/**
 * The helpers bound to a test file's store. `store` is read at each call
 * (the file opens it in beforeAll). Queue names are `<queuePrefix>1`,
 * `<queuePrefix>2`, ... in order of newQueue() calls, all kept in `queues`.
 */
export function scriptHelpers(store: () => TestStore, queuePrefix: string, opts: { maxPayloadBytes?: number } = {}) {
  const maxPayloadBytes = opts.maxPayloadBytes ?? 1e7;
  const queues: string[] = [];
  const newQueue = () => {
    const q = `${queuePrefix}${queues.length + 1}`;
    queues.push(q);
    return q;
  };
  const norm = (q: string, input: Partial<EnqueueInput> = {}) => normalizeEnqueue({ type: 't', ...input, queue: q }, maxPayloadBytes);
  /** Enqueues one job (type `t` unless given); returns its id. */
  async function enq(q: string, input: Partial<EnqueueInput> = {}): Promise<string> {
    const [r] = await store().store.enqueue([norm(q, input)]);
    return r.id;
  }
  /** Enqueues one job and claims it. */
  async function claimOne(q: string, input: Partial<EnqueueInput> = {}, leaseMs = 30_000, worker = 'w1') {
    const id = await enq(q, input);
    const c = await store().store.claim(q, 1, leaseMs, worker);
    expect(c.jobs.map((j) => j.id)).toEqual([id]);
    return { id, token: c.jobs[0].lockToken, job: c.jobs[0] };
  }
  /** A job whose first lease expired and was reaped, then claimed again: `stale` is the first claim's token. */
  async function staleToken(q: string) {
    const t = store();
    const first = await claimOne(q, { maxAttempts: 5 }, 100, 'w-old');
    await sleep(150);
    expect((await t.store.reapExpired(q, 10)).reaped).toBe(1);
    const c = await t.store.claim(q, 1, 30_000, 'w-new');
    expect(c.jobs.map((j) => j.id)).toEqual([first.id]);
    return { id: first.id, stale: first.token, current: c.jobs[0].lockToken };
  }
  /** The queue's events stream, oldest first, optionally of one job. */
  async function events(q: string, id?: string) {
    const t = store();
    const all = await readEvents(t.redis, t.keys(q).events);
    return id ? all.filter((e) => e.j === id) : all;
  }
  const jk = (q: string, id: string) => `${store().keys(q).base}job:${id}`;
  const raw = (q: string, id: string) => store().redis.hgetall(jk(q, id));
  /** The job's hash, its place in every set and the stream length: a refused call must leave all of it unchanged. */
  async function snapshot(q: string, id: string) {
    const t = store();
    const k = t.keys(q);
    const [hash, w, d, a, f, ev] = await Promise.all([
      raw(q, id),
      t.redis.zscore(k.waiting, id),
      t.redis.zscore(k.delayed, id),
      t.redis.zscore(k.active, id),
      t.redis.zscore(k.failed, id),
      t.redis.xlen(k.events),
    ]);
    return { hash, w, d, a, f, ev };
  }
  /** Redis's clock (TIME), epoch ms. */
  const redisNow = () => redisNowOf(store().redis);
  return { queues, newQueue, norm, enq, claimOne, staleToken, events, jk, raw, snapshot, redisNow };
}
