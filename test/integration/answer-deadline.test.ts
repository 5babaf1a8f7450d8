/**
 * HTTP_ANSWER_TIMEOUT_MS on a frozen Redis (`kill -STOP`: its socket stays
 * open, so ioredis waits for the reply without end): the request answers 503
 * `unavailable` in the envelope with Retry-After once the deadline passes; the
 * write it sent still lands when Redis resumes, and the same request sent
 * again with the same idempotency key finds it (200, replayed) — a 503 means
 * "unknown", never "nothing written". A claim's long poll is not cut at the
 * deadline: it gets its waitMs on top. The 503 says where the time went: the
 * store, or this process's event loop (busy); a request whose body never
 * reached its route is dropped, and its 503 says nothing was written.
 */
import { connect } from 'node:net';
import { startTestApi, type TestApi } from '../support/http';
import { makeTmpDir, type RedisServer, removeDir, sleepMs, startRedisServer, stopAllRedisServers } from '../support/redis-server';

const DEADLINE_MS = 400;
let dir: string;
let server: RedisServer;
let api: TestApi;

beforeAll(async () => {
  dir = makeTmpDir('answer-deadline');
  server = await startRedisServer({ dir });
  api = await startTestApi('answer-deadline', { REDIS_URL: server.url, HTTP_ANSWER_TIMEOUT_MS: String(DEADLINE_MS) });
});
afterAll(async () => {
  server?.proc?.kill('SIGCONT');
  await api?.close();
  await stopAllRedisServers();
  removeDir(dir);
});

test('a write Redis does not answer gets 503 at the deadline and lands later; the retry with the same key finds it', async () => {
  const body = { type: 'diag.echo', queue: 'dl', payload: { n: 1 }, idempotencyKey: 'k-1' };
  server.proc!.kill('SIGSTOP');
  let frozen = true;
  try {
    const t0 = Date.now();
    const r = await api.http.post('/jobs').send(body);
    const took = Date.now() - t0;
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe('unavailable');
    expect(r.body.error.message).toMatch(/HTTP_ANSWER_TIMEOUT_MS\): the store is not answering .*; what this request wrote may still land: retry with the same idempotency key/);
    expect(r.headers['retry-after']).toBe('1');
    expect(took).toBeGreaterThanOrEqual(DEADLINE_MS - 20);
    expect(took).toBeLessThan(DEADLINE_MS + 1500);
    server.proc!.kill('SIGCONT');
    frozen = false;
  } finally {
    if (frozen) server.proc!.kill('SIGCONT');
  }
  await sleepMs(200);
  const again = await api.http.post('/jobs').send(body);
  expect(again.status).toBe(200); // it had landed: the key finds the job the 503'd request made
  expect(again.headers['idempotent-replayed']).toBe('true');
});

test('a claim answered 503 by the deadline hands back what it claims once Redis answers (attempt refunded)', async () => {
  expect((await api.http.put('/queues/dl-c').send({ external: true })).status).toBe(200);
  const enq = await api.http.post('/jobs').send({ type: 'ext', queue: 'dl-c', payload: {} });
  expect(enq.status).toBe(201);
  server.proc!.kill('SIGSTOP');
  try {
    const r = await api.http.post('/queues/dl-c/claim').send({ workerId: 'w', max: 1 });
    expect(r.status).toBe(503);
  } finally {
    server.proc!.kill('SIGCONT');
  }
  let job: { status: string; attempts: number } = { status: '', attempts: -1 };
  for (let i = 0; i < 50 && job.status !== 'waiting'; i++) {
    await sleepMs(100);
    job = (await api.http.get(`/jobs/${enq.body.id}`)).body;
  }
  expect(job).toMatchObject({ status: 'waiting', attempts: 0 });
  const again = await api.http.post('/queues/dl-c/claim').send({ workerId: 'w2', max: 1 });
  expect(again.body.jobs.map((j: { id: string }) => j.id)).toEqual([enq.body.id]);
});

test('a claim long poll longer than the deadline is not cut by it', async () => {
  expect((await api.http.put('/queues/dl-x').send({ external: true })).status).toBe(200);
  const t0 = Date.now();
  const r = await api.http.post('/queues/dl-x/claim').send({ workerId: 'w', waitMs: 1200 });
  expect(r.status).toBe(200);
  expect(r.body.jobs).toEqual([]);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(1100);
});

test('the loop held (not the store): the 503 says the process was busy, not that the store is not answering', async () => {
  server.proc!.kill('SIGSTOP');
  try {
    const pending = api.http.post('/jobs').send({ type: 'diag.echo', queue: 'dl-b', payload: {} }).then((r) => r);
    // The app runs in this process: hold its event loop past the deadline, as parsing large bodies would.
    await sleepMs(50);
    for (const t0 = Date.now(); Date.now() - t0 < DEADLINE_MS + 600; );
    const r = await pending;
    expect(r.status).toBe(503);
    expect(r.body.error.message).toMatch(/HTTP_ANSWER_TIMEOUT_MS\): this process was busy \d+ ms of the \d+ ms waited \(\d+ ms of it parsing request bodies, .*\), not waiting on the store/);
  } finally {
    server.proc!.kill('SIGCONT');
  }
});

test('a body still arriving at the deadline: dropped, 503 says nothing was written, the connection closed', async () => {
  const url = new URL(api.url);
  const socket = connect(Number(url.port), url.hostname);
  let got = '';
  const closed = new Promise<void>((r) => socket.on('close', () => r()));
  socket.on('data', (d) => (got += d.toString()));
  socket.on('error', () => undefined);
  const body = JSON.stringify({ type: 'diag.echo', queue: 'dl-d', payload: { n: 1 } });
  // The headers and half the body: the rest never comes.
  socket.write(`POST /jobs HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
  await closed;
  expect(got).toMatch(/^HTTP\/1\.1 503 /);
  expect(got).toMatch(/\r\nconnection: close\r\n/i);
  expect(got).toMatch(/this request's body \(10 bytes\): still arriving after \d+ ms; nothing of this request was written \(its body never reached its route\): send it again/);
  // Nothing was: the queue holds no job.
  expect((await api.http.get('/queues/dl-d')).status).toBe(404);
});
