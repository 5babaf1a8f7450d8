import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * API.md v1.3 "Failure summaries", the rules summary, on the full stack:
 * dead letters made through the external worker protocol (so each failure
 * has the worker and attempt an operator would see), then
 * `GET /jobs/dlq/groups` must say what each group's jobs share — one bad
 * worker, a payload key that is new, one downstream down across types —
 * with the hourly series, example ids and payload keys; project isolation;
 * bad input 4xx.
 */
const ROOT = 'sk_summaries_root_0123456789abcdefghijklmnop';

type Summary = {
  kind: string; text: string; count: number; firstAt: string; lastAt: string; hourly: number[]; types: string[]; queues: string[];
  workers: string[]; attempts: number[]; payloadKeys: string[]; exampleJobIds: string[]; newPayloadKeys: string[]; sampleSize: number;
};
type Group = { fingerprint: string; sample: string; count: number; types: string[]; queues: string[]; summary: Summary };

let api: TestApi;
const as = (project = 'default') => {
  const auth = (r: any) => r.set('authorization', `Bearer ${ROOT}`).set('x-sluice-project', project);
  return {
    get: (url: string) => auth(api.http.get(url)),
    post: (url: string, body: unknown = {}) => auth(api.http.post(url)).send(body as object),
    put: (url: string, body: unknown = {}) => auth(api.http.put(url)).send(body as object),
  };
};

/** Enqueues `payloads` of `type` on the external queue `queue`; returns their ids. */
async function enqueue(queue: string, type: string, payloads: object[], extra: object = {}, project = 'default'): Promise<string[]> {
  const r = await as(project).post('/jobs/batch', { jobs: payloads.map((payload) => ({ queue, type, payload, ...extra })) });
  expect(r.status).toBe(201);
  return r.body.jobs.map((j: { id: string }) => j.id);
}

/**
 * Claims `n` jobs of `queue` as `workerId` and ends each: `fail` with the
 * message (retryable, so attempts remain), or completes it. Returns the ids handled.
 */
async function work(queue: string, workerId: string, n: number, end: { fail: string } | 'complete', project = 'default'): Promise<string[]> {
  const done: string[] = [];
  const deadline = Date.now() + 15_000;
  while (done.length < n && Date.now() < deadline) {
    const c = await as(project).post(`/queues/${queue}/claim`, { workerId, max: Math.min(100, n - done.length), waitMs: 200 });
    expect(c.status).toBe(200);
    for (const j of c.body.jobs as { id: string; lockToken: string }[]) {
      const r =
        end === 'complete'
          ? await as(project).post(`/jobs/${j.id}/complete`, { lockToken: j.lockToken, result: { ok: true } })
          : await as(project).post(`/jobs/${j.id}/fail`, { lockToken: j.lockToken, error: { message: end.fail } });
      expect(r.status).toBe(200);
      done.push(j.id);
    }
  }
  expect(done).toHaveLength(n);
  return done;
}

async function groups(query: Record<string, string> = {}, project = 'default'): Promise<Group[]> {
  const r = await as(project).get('/jobs/dlq/groups').query(query);
  expect(r.status).toBe(200);
  return r.body.items as Group[];
}

/** The group whose sample matches `re`, once it has `count` jobs. */
async function groupOf(re: RegExp, count: number, project = 'default'): Promise<Group> {
  let found: Group | undefined;
  await waitUntil(`group ${re} of ${count}`, async () => {
    found = (await groups({}, project)).find((g) => re.test(g.sample ?? ''));
    return found?.count === count;
  }, 20_000, 100);
  return found!;
}

beforeAll(async () => {
  api = await startTestApi('e2e-summaries', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'api,audit,scheduler' });
  for (const q of ['pay', 'inv', 'mail', 'sms', 'hooks']) expect((await as().put(`/queues/${q}`, { external: true })).status).toBe(200);
}, 60_000);
afterAll(() => api?.close());

it('one worker bad: all 12 failed on worker w-3 after their 3rd attempt', async () => {
  // Healthy traffic on w-1 and w-2 first.
  await enqueue('pay', 'charge', Array.from({ length: 6 }, (_, i) => ({ orderId: i, amount: 10 })));
  await work('pay', 'w-1', 3, 'complete');
  await work('pay', 'w-2', 3, 'complete');
  const ids = await enqueue('pay', 'charge', Array.from({ length: 12 }, (_, i) => ({ orderId: 100 + i, amount: 12.5 })), {
    maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: 'none' },
  });
  // Every attempt of every job lands on w-3 (the others are not claiming).
  for (let attempt = 1; attempt <= 3; attempt++) await work('pay', 'w-3', 12, { fail: 'socket hang up talking to card processor (pool 7 exhausted)' });
  const g = await groupOf(/socket hang up/, 12);
  const s = g.summary;
  expect(s.kind).toBe('rules');
  expect(s).toMatchObject({ count: 12, types: ['charge'], queues: ['pay'], workers: ['w-3'], attempts: [3], payloadKeys: ['amount', 'orderId'], newPayloadKeys: [], sampleSize: 12 });
  expect(s.hourly).toHaveLength(24);
  expect(s.hourly[23]).toBe(12);
  expect(s.hourly.slice(0, 23).every((n) => n === 0)).toBe(true);
  expect(s.exampleJobIds).toHaveLength(5);
  for (const id of s.exampleJobIds) expect(ids).toContain(id);
  expect(s.firstAt).toBe((g as unknown as { firstAt: string }).firstAt);
  expect(s.text).toMatch(/^12 jobs of type charge in queue pay failed with "socket hang up.*" since \d\d:\d\d UTC, 12 in the last hour\./);
  expect(s.text).toMatch(/All 12 failed on worker w-3 after their 3rd attempt/);
  expect(s.text).toMatch(/check worker w-3/);
}, 60_000);

it('one payload key new: the failures began with a new payload key `currency`', async () => {
  await enqueue('inv', 'invoice', Array.from({ length: 5 }, (_, i) => ({ customer: `c${i}`, amount: i })));
  await work('inv', 'w-1', 5, 'complete');
  await new Promise((r) => setTimeout(r, 5)); // the failures' jobs are created after the completed ones
  await enqueue('inv', 'invoice', Array.from({ length: 6 }, (_, i) => ({ customer: `c${i}`, amount: i, currency: 'XTS' })), { maxAttempts: 1 });
  await work('inv', 'w-1', 3, { fail: 'unsupported currency XTS for customer 17' });
  await work('inv', 'w-2', 3, { fail: 'unsupported currency XTS for customer 18' });
  const s = (await groupOf(/unsupported currency/, 6)).summary;
  expect(s).toMatchObject({ count: 6, workers: ['w-1', 'w-2'], attempts: [1], payloadKeys: ['amount', 'currency', 'customer'], newPayloadKeys: ['currency'] });
  expect(s.text).toMatch(/failed on their first attempt/);
  expect(s.text).toMatch(/the failures began with a new payload key `currency`/);
  expect(s.text).not.toMatch(/worker w-/);
}, 60_000);

it('one downstream down across types: the same error in 3 types and 3 queues', async () => {
  const message = (port: number) => `connect ECONNREFUSED 10.0.0.5:${port}`;
  const spread: [string, string][] = [['mail', 'send_email'], ['sms', 'send_sms'], ['hooks', 'webhook']];
  for (const [queue, type] of spread) {
    await enqueue(queue, type, Array.from({ length: 4 }, (_, i) => ({ to: `x${i}` })), { maxAttempts: 1 });
    await work(queue, 'w-1', 2, { fail: message(5432) });
    await work(queue, 'w-2', 1, { fail: message(5433) });
    await work(queue, 'w-4', 1, { fail: message(5432) });
  }
  const g = await groupOf(/ECONNREFUSED/, 12);
  const s = g.summary;
  expect(s.types).toEqual(['send_email', 'send_sms', 'webhook']);
  expect(s.queues).toEqual(['hooks', 'mail', 'sms']);
  expect(s.workers).toEqual(['w-1', 'w-2', 'w-4']);
  expect(s.payloadKeys).toEqual(['to']);
  expect(s.text).toMatch(/^12 jobs of 3 types \(send_email, send_sms, webhook\) in 3 queues \(hooks, mail, sms\) failed with "connect ECONNREFUSED/);
  expect(s.text).toMatch(/shared dependency/);
  expect(s.text).toMatch(/check the downstream named in the error/);
  // The queue filter narrows the summary like the group.
  const one = (await groups({ queue: 'sms' })).find((x) => x.fingerprint === g.fingerprint)!;
  expect(one.summary).toMatchObject({ count: 4, queues: ['sms'], types: ['send_sms'] });
}, 60_000);

it('project isolation: another project sees neither the groups nor their summaries', async () => {
  expect((await as().post('/projects', { name: 'other' })).status).toBe(201);
  expect((await as('other').put('/queues/pay', { external: true })).status).toBe(200);
  await enqueue('pay', 'charge', [{ secretOrder: 1 }], { maxAttempts: 1 }, 'other');
  await work('pay', 'w-9', 1, { fail: 'socket hang up talking to card processor (pool 9 exhausted)' }, 'other');
  const mine = await groupOf(/socket hang up/, 1, 'other');
  expect(mine.summary).toMatchObject({ count: 1, workers: ['w-9'], payloadKeys: ['secretOrder'] });
  expect(mine.summary.text).toMatch(/^1 job of type charge in queue pay failed/);
  // default's group of the same fingerprint is still its own 12 jobs, none of other's.
  const theirs = (await groups()).find((x) => x.fingerprint === mine.fingerprint)!;
  expect(theirs.summary.count).toBe(12);
  expect(theirs.summary.workers).toEqual(['w-3']);
  expect(theirs.summary.exampleJobIds).not.toContain(mine.summary.exampleJobIds[0]);
}, 60_000);

it('bad input is a 4xx envelope, never a 5xx', async () => {
  for (const q of [{ limit: '0' }, { limit: '1e1' }, { queue: 'Not A Queue' }, { queue: '\u0000' }]) {
    const r = await as().get('/jobs/dlq/groups').query(q);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('validation_failed');
  }
});
