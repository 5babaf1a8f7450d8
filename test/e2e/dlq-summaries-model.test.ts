import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type Redis from 'ioredis';
import request from 'supertest';
import { AppModule } from '../../src/app.module';
import { loadConfig } from '../../src/config/config';
import { SUMMARY_SYSTEM_PROMPT } from '../../src/core/summary-request';
import { createLogger } from '../../src/logging/logger';
import { createRedis } from '../../src/redis/connection';
import { createHttpApp } from '../../src/server/http-app';
import { validatorFor } from '../support/http';
import { validatingAgent } from '../support/openapi-validator';
import { openTestDb, TestDb } from '../support/postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * API.md v1.3 "Failure summaries", the model path, on the full stack with a
 * chat-completions server of the test's own on loopback (allowed: the URL
 * is the operator's): what it received (the error present; planted payload
 * values and secret-keyed values absent without the opt-in, secret-keyed ones
 * absent with it), the key sent but never logged, the hourly budget, a model
 * that hangs or answers 500 leaving the rules summary, a summary asked for
 * again (operator, in the operator log; viewer and producer 403), another
 * project's group out of reach, bad fingerprints 4xx.
 */
const ROOT = 'sk_summaries_model_root_0123456789abcdefghijk';
const MODEL_KEY = 'sk-model-key-never-logged-5e1f0a';
const PLANTED = 'planted-value-b7d1c3';
const SECRET = 'secret-value-a94f20';
const OPTED = 'opted-in-value-3c8e77';
const BUDGET = 10;

type Summary = { kind: string; text: string; nextStep?: string; model?: string; generatedAt?: string; rulesText?: string; count: number; summarizedCount?: number };
type Group = { fingerprint: string; sample: string; count: number; summary: Summary };
type Received = { headers: http.IncomingHttpHeaders; body: { model: string; messages: { role: string; content: string }[]; stream: boolean }; url: string };

const received: Received[] = [];
const sockets = new Set<Socket>();
let model: http.Server;
let app: NestFastifyApplication;
let db: TestDb;
let prefix: string;
let agent: ReturnType<typeof request>;
const lines: string[] = [];
const keys: Record<'viewer' | 'operator' | 'producer', string> = { viewer: '', operator: '', producer: '' };

const as = (who: 'root' | keyof typeof keys = 'root', project = 'default') => {
  const auth = (r: any) => (who === 'root' ? r.set('authorization', `Bearer ${ROOT}`).set('x-sluice-project', project) : r.set('authorization', `Bearer ${keys[who]}`));
  return {
    get: (url: string) => auth(agent.get(url)),
    post: (url: string, body?: unknown) => (body === undefined ? auth(agent.post(url)) : auth(agent.post(url)).send(body as object)),
    put: (url: string, body: unknown = {}) => auth(agent.put(url)).send(body as object),
  };
};

/** The user message the model received for the group whose error says `marker`. */
const sentFor = (marker: string) => received.filter((r) => r.body.messages[1].content.includes(marker));

async function deadLetter(queue: string, payload: object, message: string, n = 1): Promise<void> {
  const r = await as().post('/jobs/batch', { jobs: Array.from({ length: n }, () => ({ queue, type: 'task', payload, maxAttempts: 1 })) });
  expect(r.status).toBe(201);
  // All claimed first, then failed at once: the group reaches the history whole (as a rule), so the
  // summarizer rarely sees it half made (then it summarizes it again once doubled, which the asserts allow).
  const held: { id: string; lockToken: string }[] = [];
  while (held.length < n) held.push(...((await as().post(`/queues/${queue}/claim`, { workerId: 'w-1', max: n - held.length, waitMs: 200 })).body.jobs as { id: string; lockToken: string }[]));
  const failed = await Promise.all(held.map((j) => as().post(`/jobs/${j.id}/fail`, { lockToken: j.lockToken, error: { message } })));
  for (const x of failed) expect(x.status).toBe(200);
}

async function group(marker: string, project = 'default'): Promise<Group | undefined> {
  const r = await as('root', project).get('/jobs/dlq/groups');
  expect(r.status).toBe(200);
  return (r.body.items as Group[]).find((g) => g.sample.includes(marker));
}

beforeAll(async () => {
  model = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Received['body'];
      received.push({ headers: req.headers, body, url: req.url ?? '' });
      const content = body.messages[1]?.content ?? '';
      if (content.includes('HANG-ME')) return; // never answers
      if (content.includes('FAIL-500')) {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"model overloaded"}');
        return;
      }
      const n = received.length;
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ id: `c${n}`, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify({ diagnosis: `Diagnosis number ${n}.`, nextStep: `Step number ${n}.` }) }, finish_reason: 'stop' }] }),
      );
    });
  });
  model.on('connection', (s: Socket) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  await new Promise<void>((r) => model.listen(0, '127.0.0.1', r));
  const port = (model.address() as AddressInfo).port;

  db = await openTestDb('e2e-summaries-model');
  prefix = testPrefix('e2e-summaries-model');
  const config = loadConfig({
    REDIS_URL, DATABASE_URL: db.url, REDIS_PREFIX: prefix, ROLE: 'api,audit,scheduler', LOG_LEVEL: 'debug', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT,
    SUMMARY_MODEL_URL: `http://127.0.0.1:${port}/v1`, SUMMARY_MODEL: 'test-model', SUMMARY_MODEL_KEY: MODEL_KEY,
    SUMMARY_TIMEOUT_MS: '800', SUMMARY_MAX_PER_HOUR: String(BUDGET), SUMMARY_INTERVAL_MS: '250',
  });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const log = createLogger('debug', 'sluice', false, sink);
  app = await createHttpApp(AppModule.forRoles(config, log), config, log);
  await app.listen(0, '127.0.0.1');
  agent = validatingAgent(request(`http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`), () => validatorFor(app));
  for (const role of ['viewer', 'operator', 'producer'] as const) {
    const k = await as().post('/keys', { name: role, role });
    expect(k.status).toBe(201);
    keys[role] = k.body.secret;
  }
  expect((await as().put('/queues/plain', { external: true })).status).toBe(200);
  const opt = await as().put('/queues/optin', { external: true, summaryIncludesPayload: true });
  expect(opt.status).toBe(200);
  expect(opt.body.summaryIncludesPayload).toBe(true);
  expect((await as().get('/queues/plain')).body.summaryIncludesPayload).toBe(false);
}, 60_000);

afterAll(async () => {
  await app?.close();
  for (const s of sockets) s.destroy();
  await new Promise((r) => model?.close(r));
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }) as Redis;
  await deleteByPrefix(redis, prefix);
  redis.disconnect();
  await db?.close();
});

test('the model summarizes each group once, sent exactly the allowed facts; a hang or a 500 leaves the rules summary', async () => {
  const payload = { customer: PLANTED, amount: 12.5, card: { number: '4111111111111111', apiKey: SECRET }, auth: { password: SECRET } };
  await deadLetter('plain', payload, 'gateway refused charge GROUP-A for card', 3);
  await deadLetter('optin', { note: OPTED, deep: { list: [{ apiToken: SECRET }] }, Authorization: SECRET }, 'ledger rejected entry GROUP-B', 2);
  await deadLetter('plain', { customer: PLANTED }, 'downstream HANG-ME did not answer');
  await deadLetter('plain', { customer: PLANTED }, 'downstream FAIL-500 broke');

  await waitUntil('a model summary of A and B made at their full size', async () => (await group('GROUP-A'))?.summary.summarizedCount === 3 && (await group('GROUP-B'))?.summary.summarizedCount === 2, 20_000, 100);
  await waitUntil('calls for the hang and the 500', async () => sentFor('HANG-ME').length >= 1 && sentFor('FAIL-500').length >= 1, 20_000, 100);

  // What the model received for A (no opt-in): the error, counts, types, the payload's keys; no value.
  const a = sentFor('GROUP-A').at(-1)!;
  expect(a.url).toBe('/v1/chat/completions');
  expect(a.headers.authorization).toBe(`Bearer ${MODEL_KEY}`);
  expect(a.body.model).toBe('test-model');
  expect(a.body.stream).toBe(false);
  expect(a.body.messages[0]).toEqual({ role: 'system', content: SUMMARY_SYSTEM_PROMPT });
  const factsA = JSON.parse(a.body.messages[1].content.replace(/^[^{]*/, ''));
  expect(factsA.sampleErrors).toEqual(['gateway refused charge GROUP-A for card']);
  expect(factsA).toMatchObject({ count: 3, types: ['task'], queues: ['plain'], attempts: [1] });
  expect(factsA.payloadKeysAndTypes[0]).toMatchObject({ customer: 'string', amount: 'number', card: { apiKey: 'string' } });
  expect(factsA.payloadSamples).toBeUndefined();
  const rawA = JSON.stringify(a.body);
  for (const v of [PLANTED, SECRET, '4111111111111111', '12.5']) expect(rawA).not.toContain(v);
  expect(JSON.stringify(received.map((r) => r.body))).not.toContain(PLANTED);

  // B's queue opted in: its payload values, never a secret-keyed one.
  const rawB = JSON.stringify(sentFor('GROUP-B').at(-1)!.body);
  expect(rawB).toContain(OPTED);
  expect(rawB).not.toContain(SECRET);
  expect(rawB).toContain('[redacted]');

  const ga = (await group('GROUP-A'))!.summary;
  expect(ga).toMatchObject({ kind: 'model', model: 'test-model', count: 3, summarizedCount: 3 });
  expect(ga.text).toMatch(/^Diagnosis number \d+\.$/);
  expect(ga.nextStep).toMatch(/^Step number \d+\.$/);
  expect(Date.parse(ga.generatedAt!)).toBeGreaterThan(Date.now() - 60_000);
  expect(ga.rulesText).toMatch(/^3 jobs of type task in queue plain failed/);

  // The hang (past SUMMARY_TIMEOUT_MS) and the 500 leave the rules summary; each was tried once, not again and again.
  await new Promise((r) => setTimeout(r, 1500));
  expect((await group('HANG-ME'))!.summary.kind).toBe('rules');
  expect((await group('FAIL-500'))!.summary.kind).toBe('rules');
  expect(sentFor('HANG-ME')).toHaveLength(1);
  expect(sentFor('FAIL-500')).toHaveLength(1);
  expect(received.length).toBeLessThanOrEqual(6); // 4, or one more for A or B seen half made (in all, the budget allows for it)
  const warns = lines.filter((l) => l.includes('the rules summary stays'));
  expect(warns.some((l) => l.includes('did not answer within 800 ms'))).toBe(true);
  expect(warns.some((l) => l.includes('HTTP 500'))).toBe(true);

  // A group that has doubled since its summary is summarized again.
  const callsA = sentFor('GROUP-A').length;
  await deadLetter('plain', payload, 'gateway refused charge GROUP-A for card', 3);
  await waitUntil('A summarized again at 6', async () => (await group('GROUP-A'))?.summary.summarizedCount === 6, 20_000, 100);
  expect(sentFor('GROUP-A')).toHaveLength(callsA + 1);
  expect(JSON.parse(sentFor('GROUP-A').at(-1)!.body.messages[1].content.replace(/^[^{]*/, '')).count).toBe(6);
}, 60_000);

test('summarize again: operator only, audited, queued for the scheduler; then the hourly budget holds', async () => {
  const a = (await group('GROUP-A'))!;
  const before = a.summary.generatedAt!;
  expect((await as('viewer').get('/jobs/dlq/groups')).status).toBe(200);
  expect((await as('viewer').post(`/jobs/dlq/groups/${a.fingerprint}/summary`)).status).toBe(403);
  expect((await as('producer').post(`/jobs/dlq/groups/${a.fingerprint}/summary`)).status).toBe(403);
  const r = await as('operator').post(`/jobs/dlq/groups/${a.fingerprint}/summary`);
  expect(r.status).toBe(202);
  expect(r.body).toMatchObject({ fingerprint: a.fingerprint, queued: true, summary: { kind: 'model' } });
  await waitUntil('summarized again', async () => (await group('GROUP-A'))!.summary.generatedAt !== before, 20_000, 100);
  const callsForA = sentFor('GROUP-A').length;
  // The operator log is written behind the answer (src/oplog): read until it is there.
  await waitUntil('dlq.summarize in the operator log', async () => {
    const log = await as().get('/audit-log?limit=20');
    expect(log.status).toBe(200);
    return log.body.items.some((i: { action: string; target: string; status: number }) => i.action === 'dlq.summarize' && i.target === a.fingerprint && i.status === 202);
  }, 10_000, 100);

  // The budget (10 an hour): new groups beyond it, and another request, stay with what they have.
  const left = BUDGET - received.length;
  expect(left).toBeGreaterThanOrEqual(1);
  for (let i = 0; i < left + 2; i++) await deadLetter('plain', { customer: PLANTED }, `queue full GROUP-E${'x'.repeat(i + 1)}`);
  await waitUntil('the budget spent', async () => received.length === BUDGET, 20_000, 100);
  expect((await as('operator').post(`/jobs/dlq/groups/${a.fingerprint}/summary`)).status).toBe(202);
  await new Promise((r) => setTimeout(r, 2000));
  expect(received).toHaveLength(BUDGET);
  expect(sentFor('GROUP-A')).toHaveLength(callsForA);
  const e = (await as().get('/jobs/dlq/groups')).body.items.filter((g: Group) => g.sample.includes('GROUP-E'));
  expect(e).toHaveLength(left + 2);
  expect(e.filter((g: Group) => g.summary.kind === 'rules')).toHaveLength(2);
}, 60_000);

test('bad fingerprints are 4xx; another project cannot see or summarize the group', async () => {
  const a = (await group('GROUP-A'))!;
  for (const fp of ['XYZ', 'ABCDEF0123456789', '0123456789abcdef0', '\u0000', 'g123456789abcdef']) {
    const r = await as('operator').post(`/jobs/dlq/groups/${encodeURIComponent(fp)}/summary`);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.body.error.code).toBeDefined();
  }
  const unknown = await as('operator').post('/jobs/dlq/groups/0123456789abcdef/summary');
  expect(unknown.status).toBe(404);
  expect(unknown.body.error.code).toBe('not_found');
  expect((await as('operator').post(`/jobs/dlq/groups/${a.fingerprint}/summary`, { force: true })).status).toBe(400);
  expect((await as().post('/projects', { name: 'elsewhere' })).status).toBe(201);
  expect((await as('root', 'elsewhere').post(`/jobs/dlq/groups/${a.fingerprint}/summary`)).status).toBe(404);
  expect(await group('GROUP-A', 'elsewhere')).toBeUndefined();
});

test('the model key and payload values never reach the log', () => {
  expect(lines.length).toBeGreaterThan(0);
  for (const l of lines) {
    expect(l).not.toContain(MODEL_KEY);
    expect(l).not.toContain(PLANTED);
    expect(l).not.toContain(SECRET);
  }
});
