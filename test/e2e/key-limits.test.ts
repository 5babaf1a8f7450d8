import { randomBytes } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { AppModule } from '../../src/app.module';
import { loadConfig } from '../../src/config/config';
import { createHttpApp } from '../../src/server/http-app';
import { createLogger } from '../../src/logging/logger';
import { startTestApi, validatorFor, type TestApi } from '../support/http';
import { validatingAgent } from '../support/openapi-validator';
import { REDIS_URL, sleep } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * Limits per credential (issue: security): a token bucket per API key counted
 * in Redis across api replicas (429 rate_limited + Retry-After, refill), the
 * KEY_RATE_LIMIT_* defaults and a key's own override; PROJECT_MAX_WAITING.
 */
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
let api: TestApi;
let other: { app: NestFastifyApplication; http: ReturnType<typeof request> };
/** An admin key of its own generous limit (the bootstrap key is limited by the defaults like any key). */
let adminKey = '';
const admin = () => `Bearer ${adminKey}`;
const ENV = { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP, KEY_RATE_LIMIT_PER_SEC: '2', KEY_RATE_LIMIT_BURST: '3' };

beforeAll(async () => {
  api = await startTestApi('keylimits', ENV);
  const config = loadConfig({ REDIS_URL, DATABASE_URL: api.db.url, REDIS_PREFIX: api.prefix, ROLE: 'api', LOG_LEVEL: 'silent', ...ENV });
  const log = createLogger(config.logLevel);
  const app = await createHttpApp(AppModule.forRoles(config, log), config, log);
  await app.listen(0, '127.0.0.1');
  other = { app, http: validatingAgent(request(`http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`), () => validatorFor(app)) };
  const a = await api.http.post('/keys').set('authorization', `Bearer ${BOOTSTRAP}`).send({ name: 'limits-admin', role: 'admin', rateLimit: { perSec: 10_000 } });
  expect(a.body.rateLimit).toEqual({ perSec: 10_000, burst: 10_000 });
  adminKey = a.body.secret;
});
afterAll(async () => {
  await other?.app.close();
  await api?.close();
});

/** Calls GET /queues with `key` alternately on the two replicas until one is refused; returns how many passed and the refusal. */
async function drain(key: string, max = 50) {
  const replicas = [api.http, other.http];
  for (let i = 0; i < max; i++) {
    const r = await replicas[i % 2].get('/queues').set('authorization', `Bearer ${key}`);
    if (r.status !== 200) return { passed: i, refused: r };
  }
  throw new Error(`no refusal in ${max} calls`);
}

test('a key own limit, across two replicas: burst then 429 rate_limited with Retry-After; refills at its rate; recorded in the audit log', async () => {
  const k = await api.http.post('/keys').set('authorization', admin()).send({ name: 'limited', role: 'operator', rateLimit: { perSec: 5, burst: 4 } });
  expect(k.status).toBe(201);
  expect(k.body.rateLimit).toEqual({ perSec: 5, burst: 4 });
  const { passed, refused } = await drain(k.body.secret);
  // 4 in the bucket, plus what refilled (5/s) while the calls ran.
  expect(passed).toBeGreaterThanOrEqual(4);
  expect(passed).toBeLessThanOrEqual(6);
  expect(refused.status).toBe(429);
  expect(refused.body.error.code).toBe('rate_limited');
  expect(refused.headers['retry-after']).toBe('1');
  await sleep(450); // 5/s: two tokens back
  const again = await drain(k.body.secret);
  expect(again.passed).toBeGreaterThanOrEqual(1);
  expect(again.passed).toBeLessThanOrEqual(3);
  // Refused on the audited route too, and recorded with who tried. A key of 1/s: its token does not come back
  // between the refusal and the pause (5/s refills one every 200 ms, which a loaded machine can take between two calls).
  const slow = await api.http.post('/keys').set('authorization', admin()).send({ name: 'slow', role: 'operator', rateLimit: { perSec: 1, burst: 1 } });
  expect((await drain(slow.body.secret)).refused.status).toBe(429);
  const pause = await api.http.post('/queues/limited-q/pause').set('authorization', `Bearer ${slow.body.secret}`);
  expect(pause.status).toBe(429);
  await waitUntil('the refused pause in the audit log', async () => {
    const rows = await api.db.dataSource.query(`SELECT actor, status FROM operator_audit WHERE request_id = $1`, [pause.headers['x-request-id']]);
    return rows.length === 1 && rows[0].actor === `key:${slow.body.id}` && rows[0].status === 429;
  });
});

test('KEY_RATE_LIMIT_PER_SEC / KEY_RATE_LIMIT_BURST apply to a key without its own limit; each key has its own bucket', async () => {
  const a = await api.http.post('/keys').set('authorization', admin()).send({ name: 'default-a', role: 'viewer' });
  const b = await api.http.post('/keys').set('authorization', admin()).send({ name: 'default-b', role: 'viewer' });
  expect(a.body.rateLimit).toBeNull();
  const ra = await drain(a.body.secret);
  expect(ra.passed).toBeGreaterThanOrEqual(3);
  expect(ra.passed).toBeLessThanOrEqual(4);
  const rb = await drain(b.body.secret);
  expect(rb.passed).toBeGreaterThanOrEqual(3);
});

test('rateLimit is bounded: 400 naming the field', async () => {
  for (const rateLimit of [{ perSec: 0 }, { perSec: 1_000_001 }, { burst: 5 }, { perSec: 1, burst: 0 }, { perSec: 1.5 }, 7]) {
    const r = await api.http.post('/keys').set('authorization', admin()).send({ name: 'bad', role: 'viewer', rateLimit });
    expect(r.status).toBe(400);
    expect(r.body.error.details.map((d: { path: string }) => d.path).join(',')).toMatch(/rateLimit/);
  }
});

describe('PROJECT_MAX_WAITING', () => {
  let capped: TestApi;
  beforeAll(async () => {
    capped = await startTestApi('projcap', { PROJECT_MAX_WAITING: '5' });
  });
  afterAll(() => capped?.close());

  test('enqueue past the cap (waiting and delayed jobs, every queue) → 429 rate_limited naming it; room again once jobs leave', async () => {
    const ids: string[] = [];
    for (const body of [{ queue: 'cap-a' }, { queue: 'cap-b' }, { queue: 'cap-a', delayMs: 60_000 }]) {
      const r = await capped.http.post('/jobs').send({ type: 'diag.echo', ...body });
      expect(r.status).toBe(201);
      ids.push(r.body.id);
    }
    const tooMany = await capped.http.post('/jobs/batch').send({ jobs: [{ type: 'diag.echo' }, { type: 'diag.echo' }, { type: 'diag.echo' }] });
    expect(tooMany.status).toBe(429);
    expect(tooMany.body.error.code).toBe('rate_limited');
    expect(tooMany.body.error.message).toMatch(/PROJECT_MAX_WAITING/);
    expect(tooMany.headers['retry-after']).toBe('1');
    const two = await capped.http.post('/jobs/batch').send({ jobs: [{ type: 'diag.echo' }, { type: 'diag.echo' }] });
    expect(two.status).toBe(201);
    ids.push(...two.body.jobs.map((j: { id: string }) => j.id));
    const sixth = await capped.http.post('/jobs').send({ type: 'diag.echo' });
    expect(sixth.status).toBe(429);
    // Nothing of a refused call was written.
    await sleep(1200);
    expect((await capped.http.post('/jobs').send({ type: 'diag.echo' })).status).toBe(429);
    for (const id of ids.slice(0, 2)) expect((await capped.http.delete(`/jobs/${id}`)).status).toBe(200);
    const back = await waitUntil('room under the cap after the next count', async () => {
      const r = await capped.http.post('/jobs').send({ type: 'diag.echo' });
      return r.status === 201 && r;
    }, 5000, 200);
    expect(back.status).toBe(201);
  });
});
