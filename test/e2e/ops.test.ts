import { Writable } from 'node:stream';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import pino from 'pino';
import request from 'supertest';
import type Redis from 'ioredis';
import { AppModule } from '../../src/app.module';
import { loadConfig } from '../../src/config/config';
import { createHttpApp } from '../../src/server/http-app';
import { createRedis } from '../../src/redis/connection';
import { startTestApi, TestApi } from '../support/http';
import { openTestDb, TestDb } from '../support/postgres';
import { privatePostgres, PrivatePostgres } from '../support/private-postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from '../support/redis';
import { waitUntil } from '../support/timing';

/** API.md "Operations": /healthz, /readyz, /metrics, /docs, and the request log. */
describe('ops endpoints (e2e)', () => {
  describe('api role on the shared services', () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi('e2e-ops');
    });
    afterAll(async () => {
      await api?.close();
    });

    it('GET /healthz → 200 {status: ok}', async () => {
      const res = await api.http.get('/healthz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
    });

    it('GET /readyz → 200 with a check per dependency', async () => {
      const res = await api.http.get('/readyz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok', checks: { redis: 'ok', postgres: 'ok', migrations: 'ok' } });
    });

    it('GET /readyz → 200 degraded naming migrations while one is not applied (the api runs on Redis alone)', async () => {
      const db = api.db.dataSource;
      const [last] = await db.query('SELECT id, timestamp, name FROM sluice_migrations ORDER BY id DESC LIMIT 1');
      await db.query('DELETE FROM sluice_migrations WHERE id = $1', [last.id]);
      try {
        const res = await api.http.get('/readyz');
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ status: 'degraded', migrations: 'pending', checks: { redis: 'ok', postgres: 'ok', migrations: 'pending' } });
        expect(res.body.details).toEqual([{ path: 'migrations', message: expect.stringContaining(last.name) }]);
      } finally {
        await db.query('INSERT INTO sluice_migrations (id, timestamp, name) VALUES ($1, $2, $3)', [last.id, last.timestamp, last.name]);
      }
      expect((await api.http.get('/readyz')).status).toBe(200);
    });

    it('GET /docs → Swagger UI HTML', async () => {
      const res = await api.http.get('/docs');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/text\/html/);
      expect(res.text).toMatch(/swagger/i);
      // With a trailing slash the UI's relative assets would break: redirected.
      const slash = await api.http.get('/docs/');
      expect(slash.status).toBe(301);
      expect(slash.headers.location).toBe('/docs');
    });

    it('GET /docs-json → OpenAPI document with /jobs, /jobs/batch and the EnqueueJobDto schema', async () => {
      const res = await api.http.get('/docs-json');
      expect(res.status).toBe(200);
      const doc = res.body;
      expect(doc.openapi).toMatch(/^3\./);
      expect(doc.paths['/jobs'].post).toBeDefined();
      expect(doc.paths['/jobs/batch'].post).toBeDefined();
      const bodyRef = doc.paths['/jobs'].post.requestBody.content['application/json'].schema.$ref;
      expect(bodyRef).toBe('#/components/schemas/EnqueueJobDto');
      const schema = doc.components.schemas.EnqueueJobDto;
      expect(schema.required).toContain('type');
      expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['type', 'payload', 'queue', 'priority', 'delayMs', 'runAt', 'maxAttempts', 'backoff', 'timeoutMs', 'idempotencyKey']));
      expect(doc.paths['/healthz'].get).toBeDefined();
      expect(doc.paths['/readyz'].get).toBeDefined();
      expect(doc.paths['/metrics'].get).toBeDefined();
    });

    it('GET /metrics (api role) → Prometheus text with queue depths and the audit gauges', async () => {
      expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'opsdepth' })).status).toBe(201);
      expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'opsdepth', delayMs: 600_000 })).status).toBe(201);
      const res = await api.http.get('/metrics');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(res.text).toContain('sluice_queue_jobs{project="default",queue="opsdepth",state="waiting"} 1');
      expect(res.text).toContain('sluice_queue_jobs{project="default",queue="opsdepth",state="delayed"} 1');
      expect(res.text).toContain('sluice_queue_jobs{project="default",queue="opsdepth",state="active"} 0');
      expect(res.text).toContain('sluice_queue_depth_scrape_success 1');
      expect(res.text).toMatch(/^sluice_audit_lag_seconds \d/m);
      expect(res.text).toMatch(/^sluice_audit_backlog_events \d/m);
      expect(res.text).toContain('sluice_audit_backlog_max 1000000');
      expect(res.text).toContain('sluice_enqueue_refused_total 0');
      expect(res.text).toContain('sluice_http_requests_total{method="POST",route="/jobs",status="201"} 2');
      expect(res.text).toMatch(/^sluice_queue_oldest_waiting_age_seconds\{project="default",queue="opsdepth"\} \d/m);
      // The worker's series belong to processes with the worker role.
      expect(res.text).not.toContain('sluice_jobs_started_total');
      // prom-client's default process metrics are on.
      expect(res.text).toMatch(/^process_cpu_user_seconds_total /m);
      expect(res.text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    });
  });

  describe('ROLE=all: metrics count a job processed in this process', () => {
    let api: TestApi;
    beforeAll(async () => {
      api = await startTestApi('e2e-ops-all', { ROLE: 'all' });
    });
    afterAll(async () => {
      await api?.close();
    });

    it('started/completed counters and processing/wait histograms', async () => {
      const res = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'opsrun', payload: { x: 1 } });
      expect(res.status).toBe(201);
      await waitUntil('job completed', async () => (await api.http.get(`/jobs/${res.body.id}`)).body.status === 'completed', 30_000, 50);
      const text = await waitUntil(
        'completion counted',
        async () => {
          const t = (await api.http.get('/metrics')).text;
          return t.includes('sluice_jobs_completed_total{project="default",queue="opsrun",type="diag.echo"} 1') ? t : undefined;
        },
        15_000,
        50,
      );
      expect(text).toContain('sluice_jobs_started_total{project="default",queue="opsrun",type="diag.echo"} 1');
      expect(text).toContain('sluice_job_processing_seconds_count{project="default",queue="opsrun",type="diag.echo",outcome="completed"} 1');
      expect(text).toContain('sluice_job_wait_seconds_count{project="default",queue="opsrun",type="diag.echo"} 1');
      expect(text).toContain('sluice_queue_jobs{project="default",queue="opsrun",state="active"} 0');
      expect(text).not.toContain('sluice_jobs_failed_total{project="default",queue="opsrun"');
    });

    it('a failed attempt is counted by reason', async () => {
      const res = await api.http.post('/jobs').send({ type: 'diag.fail', queue: 'opsfail', payload: { message: 'boom' }, maxAttempts: 1 });
      expect(res.status).toBe(201);
      const text = await waitUntil(
        'failure counted',
        async () => {
          const t = (await api.http.get('/metrics')).text;
          return t.includes('sluice_jobs_failed_total{project="default",queue="opsfail",type="diag.fail",reason="error"} 1') ? t : undefined;
        },
        30_000,
        50,
      );
      expect(text).toContain('sluice_job_processing_seconds_count{project="default",queue="opsfail",type="diag.fail",outcome="failed"} 1');
    });
  });

  describe('GET /readyz when PostgreSQL goes away', () => {
    let pg: PrivatePostgres;
    let api: TestApi;
    beforeAll(async () => {
      pg = await privatePostgres('ops-readyz');
      await pg.start();
      // The app's own database lives on the private server, which the test may stop.
      api = await startTestApi('e2e-ops-pg', { DATABASE_URL: pg.url('sluice_ops_readyz') });
    }, 120_000);
    afterAll(async () => {
      await api?.close();
      await pg?.destroy();
    });

    it('api: 200 degraded naming postgres, quickly; ok again once it is back', async () => {
      expect((await api.http.get('/readyz')).body.status).toBe('ok');
      await pg.stop('immediate');
      const t0 = Date.now();
      const res = await api.http.get('/readyz');
      const tookMs = Date.now() - t0;
      // API.md v1.1: the api needs Redis only, so it stays ready (enqueue goes on).
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'degraded', postgres: 'down', checks: { redis: 'ok', postgres: 'down', migrations: 'unknown' } });
      expect(res.body.details).toEqual([{ path: 'postgres', message: expect.stringMatching(/PostgreSQL is unreachable/) }]);
      // Bounded by the probe's timeout (1.5 s), with a generous margin for a busy machine.
      expect(tookMs).toBeLessThan(10_000);
      // Liveness does not depend on PostgreSQL.
      expect((await api.http.get('/healthz')).status).toBe(200);
      await pg.start();
      await waitUntil('ready again', async () => (await api.http.get('/readyz')).body.status === 'ok', 30_000, 200);
    }, 120_000);
  });

  describe('request log', () => {
    let app: NestFastifyApplication;
    let db: TestDb;
    let prefix: string;
    const lines: Record<string, unknown>[] = [];
    beforeAll(async () => {
      db = await openTestDb('e2e-ops-log');
      prefix = testPrefix('e2e-ops-log');
      const config = loadConfig({ REDIS_URL, DATABASE_URL: db.url, REDIS_PREFIX: prefix, ROLE: 'api', DIAGNOSTIC_HANDLERS: 'true', LOG_LEVEL: 'debug' });
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
          done();
        },
      });
      const log = pino({ level: 'debug' }, sink);
      app = await createHttpApp(AppModule.forRoles(config, log), config, log);
      await app.listen(0, '127.0.0.1');
    });
    afterAll(async () => {
      await app?.close();
      const r = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
      await deleteByPrefix(r as Redis, prefix);
      r.disconnect();
      await db?.close();
    });

    it('one debug line per request: method, route, status, ms, reqId, body bytes; no payload values', async () => {
      const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
      const body = JSON.stringify({ type: 'diag.echo', payload: { secret: 'hunter2-value' } });
      const res = await request(url).post('/jobs').set('Content-Type', 'application/json').set('X-Request-Id', 'log-test-1').send(body);
      expect(res.status).toBe(201);
      await request(url).get(`/jobs/${res.body.id}`).set('X-Request-Id', 'log-test-2');
      await request(url).get('/no/such/path').set('X-Request-Id', 'log-test-3');
      const reqLines = await waitUntil('three request lines', async () => {
        const l = lines.filter((x) => x.msg === 'request');
        return l.length >= 3 ? l : undefined;
      });
      const post = reqLines.find((l) => l.reqId === 'log-test-1');
      expect(post).toMatchObject({ level: 20, method: 'POST', route: '/jobs', status: 201, bytes: Buffer.byteLength(body) });
      expect(typeof post!.ms).toBe('number');
      expect(reqLines.find((l) => l.reqId === 'log-test-2')).toMatchObject({ method: 'GET', route: '/jobs/:id', status: 200, bytes: 0 });
      expect(reqLines.find((l) => l.reqId === 'log-test-3')).toMatchObject({ route: 'unmatched', status: 404 });
      expect(JSON.stringify(lines)).not.toContain('hunter2-value');
    });
  });
});
