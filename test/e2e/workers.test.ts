import { hostname } from 'node:os';
import { ExternalWorkerSeen, WorkerRegistryStore } from '../../src/core/ports';
import { WorkerRegistry } from '../../src/workers/registry/worker-registry';
import { WorkerService } from '../../src/workers/runtime/worker.service';
import { ExternalWorkerTracker } from '../../src/workers/external/external-workers';
import type { ApiWorker } from '../../src/workers/registry/workers.service';
import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';


describe('GET /workers (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-workers', { ROLE: 'api,worker', WORKER_CONCURRENCY: '4', QUEUES: 'wq,other', LOCK_TTL_MS: '3000', HEARTBEAT_INTERVAL_MS: '200' });
  });
  afterAll(async () => {
    await api?.close();
  });
  const workers = async (): Promise<ApiWorker[]> => {
    const res = await api.http.get('/workers');
    expect(res.status).toBe(200);
    return res.body;
  };

  it('lists the running in-process worker, and its active count while it runs a job', async () => {
    const id = api.app.get(WorkerService).workerId;
    const me = (await workers()).find((w) => w.id === id);
    expect(me).toEqual({
      id,
      hostname: hostname(),
      pid: process.pid,
      queues: ['wq', 'other'],
      concurrency: 4,
      active: 0,
      startedAt: expect.stringMatching(/Z$/),
      lastHeartbeatAt: expect.stringMatching(/Z$/),
      status: 'running',
      kind: 'process',
      jobs: [],
      lastClaimAt: null,
    });
    const job = await api.http.post('/jobs').send({ type: 'diag.sleep', queue: 'wq', payload: { ms: 2500 } });
    expect(job.status).toBe(201);
    const busy = await waitUntil('worker reports 1 active job', async () => (await workers()).find((w) => w.id === id && w.active === 1), 10_000);
    // The ids of the jobs it holds, read from the queues' active sets.
    expect(busy.jobs).toEqual([job.body.id]);
    expect(Date.parse(busy.lastHeartbeatAt ?? '')).toBeGreaterThanOrEqual(Date.parse(me!.lastHeartbeatAt ?? ''));
  });

  it('reports a worker that stopped heartbeating as dead, and a draining one as draining', async () => {
    const registry = api.app.get(WorkerRegistryStore);
    const gone = new WorkerRegistry(registry, { id: 'gone-worker', queues: ['x'], concurrency: 1 }, 150);
    await gone.beat(0);
    const draining = new WorkerRegistry(registry, { id: 'draining-worker', queues: ['y'], concurrency: 2 }, 60_000);
    await draining.draining(1);
    const dead = await waitUntil('gone-worker reported dead', async () => (await workers()).find((w) => w.id === 'gone-worker' && w.status === 'dead'), 10_000);
    // A dead worker is still shown with what it last reported.
    expect(dead).toMatchObject({ pid: process.pid, queues: ['x'], concurrency: 1 });
    expect(dead.hostname).not.toBe('');
    expect((await workers()).find((w) => w.id === 'draining-worker')).toMatchObject({ status: 'draining', active: 1, concurrency: 2, queues: ['y'] });
  });

  it('lists external workers from their claims: queues, last claim, jobs held; silent ones as dead', async () => {
    await api.http.put('/queues/wx').send({ external: true });
    const ids = (await api.http.post('/jobs/batch').send({ jobs: [0, 1, 2].map(() => ({ type: 'any', queue: 'wx', payload: {} })) })).body.jobs.map((j: { id: string }) => j.id);
    const claim = await api.http.post('/queues/wx/claim').send({ workerId: 'ext-1', max: 2 });
    expect(claim.body.jobs).toHaveLength(2);
    await api.http.post('/queues/other/claim').send({ workerId: 'ext-1', max: 1 }); // nothing to claim there: still a queue it serves
    const ext = await waitUntil('ext-1 listed', async () => (await workers()).find((w) => w.id === 'ext-1'), 5000, 100);
    expect(ext).toEqual({
      id: 'ext-1', hostname: '', pid: 0, queues: ['other', 'wx'], concurrency: 0, active: 2, kind: 'external', status: 'running',
      jobs: claim.body.jobs.map((j: { id: string }) => j.id).sort(), lastClaimAt: expect.stringMatching(/Z$/),
      startedAt: expect.stringMatching(/Z$/), lastHeartbeatAt: expect.stringMatching(/Z$/),
    });
    expect(ids).toEqual(expect.arrayContaining(ext.jobs ?? []));
    // Completing one: it holds one.
    await api.http.post(`/jobs/${claim.body.jobs[0].id}/complete`).send({ lockToken: claim.body.jobs[0].lockToken });
    await waitUntil('ext-1 holds 1', async () => (await workers()).find((w) => w.id === 'ext-1' && w.active === 1 && w.jobs?.length === 1), 5000, 100);
    // A worker last seen two minutes ago is dead, and still listed.
    const t = new ExternalWorkerTracker(api.app.get(ExternalWorkerSeen));
    t.claimed('ext-old', 'wx', Date.now() - 120_000);
    await t.flush();
    expect((await workers()).find((w) => w.id === 'ext-old')).toMatchObject({ status: 'dead', kind: 'external', queues: ['wx'], jobs: [] });
  });
});
