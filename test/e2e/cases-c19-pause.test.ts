import { HistoryQueries } from '../../src/history';
import type { RedisClient } from '../../src/redis/connection';
import { REDIS } from '../../src/redis/redis.module';
import { WorkerService } from '../../src/workers/runtime/worker.service';
import { startTestApi, TestApi } from '../support/http';
import { sleep } from '../support/redis';
import { waitBlocked, waitUntil } from '../support/timing';

/**
 * CASES C19 — Pause means pause, through HTTP. A worker blocked waiting for
 * work; pause the queue; within 50 ms post an immediate job and one with
 * delayMs 1000; wait 3 s: nothing started, both listed as waiting/delayed.
 * Resume: each runs once.
 */
describe('C19 pause means pause (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    // Every role: the worker blocks on c19, the scheduler promotes the delayed job, audit mirrors events.
    api = await startTestApi('e2e-c19', { ROLE: 'all', QUEUES: 'c19', WORKER_CONCURRENCY: '4', REAPER_INTERVAL_MS: '200' });
  });
  afterAll(async () => {
    await api?.close();
  });

  const job = async (id: string) => (await api.http.get(`/jobs/${id}`)).body;
  const events = async (id: string) => (await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event) as string[];

  it('a paused queue starts nothing, immediate or delayed; resume runs each job exactly once', async () => {
    const history = api.app.get(HistoryQueries);
    // Warm up: the worker has served c19 and is now blocked on its wake list.
    const warm = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'c19' });
    await waitUntil('warm-up job completed', async () => (await job(warm.body.id)).status === 'completed', 15_000);
    await waitBlocked(api.app.get<RedisClient>(REDIS), api.app.get(WorkerService).workerId);

    expect((await api.http.post('/queues/c19/pause')).body.paused).toBe(true);
    const [now, later] = await Promise.all([
      api.http.post('/jobs').send({ type: 'diag.sleep', queue: 'c19', payload: { ms: 10 } }),
      api.http.post('/jobs').send({ type: 'diag.sleep', queue: 'c19', payload: { ms: 10 }, delayMs: 1000 }),
    ]);
    expect([now.status, later.status]).toEqual([201, 201]);
    expect([now.body.status, later.body.status]).toEqual(['waiting', 'delayed']);
    const ids = [now.body.id as string, later.body.id as string];

    await sleep(3000);
    for (const id of ids) {
      const j = await job(id);
      expect(['waiting', 'delayed']).toContain(j.status);
      expect(j).toMatchObject({ attempts: 0, startedAt: null, workerId: null });
    }
    const q = (await api.http.get('/queues/c19')).body;
    expect(q.paused).toBe(true);
    expect(q.counts.active).toBe(0);
    expect(q.counts.waiting + q.counts.delayed).toBe(2);
    await waitUntil('audit caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);
    for (const id of ids) {
      expect(await events(id)).not.toContain('claimed');
      expect((await api.http.get(`/jobs/${id}/executions`)).body.items).toEqual([]);
    }

    expect((await api.http.post('/queues/c19/resume')).body.paused).toBe(false);
    for (const id of ids) await waitUntil(`job ${id} completed`, async () => (await job(id)).status === 'completed', 15_000);
    // Give a duplicate run the time to show up before counting.
    await sleep(500);
    await waitUntil('audit caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);
    for (const id of ids) {
      const ev = await events(id);
      expect(ev.filter((e) => e === 'claimed')).toHaveLength(1);
      expect(ev.filter((e) => e === 'completed')).toHaveLength(1);
      expect(ev[ev.length - 1]).toBe('completed');
      const execs = (await api.http.get(`/jobs/${id}/executions`)).body.items;
      expect(execs).toHaveLength(1);
      expect(execs[0].outcome).toBe('completed');
      expect((await job(id)).attempts).toBe(1);
    }
  });
});
