/*
 * k6 load test for a running Sluice (https://k6.io; k6 is a separate binary,
 * not an npm package):
 *
 *   k6 run load-test.js
 *   k6 run -e BASE_URL=http://127.0.0.1:3000 -e RATE=500 -e DURATION=2m load-test.js
 *   k6 run -e BASE_URL=https://sluice.example.com -e API_KEY=sk_... -e VIEWER_KEY=sk_... load-test.js
 *
 * Keys: a server with AUTH=on (the default off loopback) answers 401 without
 * one. API_KEY is sent as `Authorization: Bearer` on every request; it needs
 * the `producer` role for POST /jobs. The `dashboard` scenario (and the
 * summary in teardown) reads GET /dashboard/stats, which needs `viewer`:
 * VIEWER_KEY, default API_KEY, so one `operator` key covers both. Create
 * keys with an admin key: POST /keys {"name": "k6", "role": "producer"}.
 * setup() checks both keys before any load and stops the run with a message
 * naming the one that is refused. With AUTH=off no key is needed (none is sent).
 *
 * Scenario `enqueue`: POST /jobs at a constant arrival rate (RATE per second
 * for DURATION, up to MAX_VUS virtual users), with the mix of
 * scripts/lib/load-scenario.js (keep the two in step): per 100 requests 60
 * emails, 29 payment SMS at high priority, 10 thumbnails, 1 unrecoverable
 * email (goes straight to the dead-letter queue). Every 50th iteration
 * also resubmits with an idempotency key and checks the 200 +
 * `Idempotent-Replayed: true` answer. Scenario `dashboard`: one
 * GET /dashboard/stats per second, as the dashboard would.
 *
 * Thresholds (the run fails when one is crossed): fewer than 1 % failed
 * requests, p95 of POST /jobs under P95_MS (default 250 ms), p99 under
 * P99_MS (default 500 ms), more than 99 % of checks passing.
 *
 * k6 cannot read PostgreSQL, so it cannot prove that no accepted job was
 * lost; `npm run load` runs this scenario with autocannon and does that check.
 */
import http from 'k6/http';
import exec from 'k6/execution';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:3000').replace(/\/$/, '');
const RATE = parseInt(__ENV.RATE || '200', 10);
const DURATION = __ENV.DURATION || '1m';
const VUS = parseInt(__ENV.VUS || '50', 10);
const MAX_VUS = parseInt(__ENV.MAX_VUS || String(VUS * 4), 10);
const P95_MS = parseInt(__ENV.P95_MS || '250', 10);
const P99_MS = parseInt(__ENV.P99_MS || '500', 10);

const API_KEY = __ENV.API_KEY || '';
const VIEWER_KEY = __ENV.VIEWER_KEY || API_KEY;

/** Headers with `Authorization: Bearer <key>` when a key is set. */
function withKey(key, headers = {}) {
  return key ? { ...headers, Authorization: `Bearer ${key}` } : headers;
}
const JSON_HEADERS = withKey(API_KEY, { 'Content-Type': 'application/json' });
const VIEWER_HEADERS = withKey(VIEWER_KEY);
const accepted = new Counter('jobs_accepted');
const replayed = new Counter('jobs_idempotent_replayed');

export const options = {
  scenarios: {
    enqueue: {
      executor: 'constant-arrival-rate',
      exec: 'enqueue',
      rate: RATE,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: VUS,
      maxVUs: MAX_VUS,
    },
    dashboard: {
      executor: 'constant-arrival-rate',
      exec: 'dashboard',
      rate: 1,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: 1,
      maxVUs: 2,
    },
  },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    'http_req_duration{scenario:enqueue}': [`p(95)<${P95_MS}`, `p(99)<${P99_MS}`],
    checks: ['rate>0.99'],
  },
};

/** The body of request number i: the same mix as scripts/lib/load-scenario.js (exported for test/e2e/k6-scenario.test.ts; k6 ignores it). */
export function jobBody(i) {
  const k = i % 100;
  if (k === 99) return { type: 'send_email', queue: 'default', payload: { to: `broken-${i}`, subject: 'load' } };
  if (k < 60) return { type: 'send_email', queue: 'default', payload: { to: `user${i}@example.com`, subject: `load #${i}` } };
  if (k < 89) {
    const phone = `+1555${String(i % 1e7).padStart(7, '0')}`;
    return { type: 'SEND_PAYMENT_SMS', queue: 'critical', priority: 'high', payload: { phone, amount: 1 + (i % 500), currency: 'EUR' } };
  }
  return { type: 'image_processing', queue: 'media', payload: { imageUrl: `https://cdn.example.com/load/${i}.jpg`, sizes: ['thumb'] } };
}

/** Why `res` (a 401/403) refused the key named `name`, as a message for setup(). */
function refusal(name, role, res) {
  if (res.status === 401) return `${name}: 401 (${name === 'API_KEY' && !API_KEY ? 'the server has AUTH=on: pass -e API_KEY=sk_...' : 'unknown, revoked or expired key'})`;
  return `${name}: 403 (the key's role may not; it needs ${role})`;
}

/** Fails fast (before any load) when the server is not ready or a key is refused. */
export function setup() {
  let res = http.get(`${BASE_URL}/readyz`);
  if (res.status === 404) res = http.get(`${BASE_URL}/healthz`);
  if (res.status !== 200) throw new Error(`${BASE_URL} is not ready: ${res.status} ${res.body}`);
  // An empty POST /jobs: the key is checked before the body, so a key that may
  // enqueue gets 400 (nothing is enqueued) and one that may not 401/403.
  const jobs = http.post(`${BASE_URL}/jobs`, '{}', { headers: JSON_HEADERS, responseCallback: http.expectedStatuses(400), tags: { name: 'setup: API_KEY' } });
  if (jobs.status === 401 || jobs.status === 403) throw new Error(refusal('API_KEY', 'producer', jobs));
  const stats = http.get(`${BASE_URL}/dashboard/stats`, { headers: VIEWER_HEADERS, tags: { name: 'setup: VIEWER_KEY' } });
  if (stats.status === 401 || stats.status === 403) throw new Error(refusal(VIEWER_KEY === API_KEY ? 'API_KEY (also the dashboard key)' : 'VIEWER_KEY', 'viewer', stats));
  return { startedAt: new Date().toISOString() };
}

export function enqueue() {
  const i = exec.scenario.iterationInTest;
  const body = jobBody(i);
  const res = http.post(`${BASE_URL}/jobs`, JSON.stringify(body), { headers: JSON_HEADERS, tags: { name: 'POST /jobs' } });
  const ok = check(res, {
    'POST /jobs → 201': (r) => r.status === 201,
    'job has an id': (r) => r.status === 201 && typeof r.json('id') === 'string',
  });
  if (ok) accepted.add(1);

  if (i % 50 === 0) {
    // Idempotent resubmission: same key and body twice → 201, then 200 with the same job.
    const keyed = JSON.stringify({ ...body, idempotencyKey: `k6-${exec.vu.idInTest}-${i}` });
    const first = http.post(`${BASE_URL}/jobs`, keyed, { headers: JSON_HEADERS, tags: { name: 'POST /jobs (idempotent)' } });
    const again = http.post(`${BASE_URL}/jobs`, keyed, { headers: JSON_HEADERS, tags: { name: 'POST /jobs (idempotent)' } });
    const same = check(again, {
      'idempotent first → 201': () => first.status === 201,
      'idempotent replay → 200': (r) => r.status === 200,
      'Idempotent-Replayed: true': (r) => r.headers['Idempotent-Replayed'] === 'true',
      'replay returns the same job': (r) => first.status === 201 && r.status === 200 && r.json('id') === first.json('id'),
    });
    if (first.status === 201) accepted.add(1);
    if (same) replayed.add(1);
  }
}

export function dashboard() {
  const res = http.get(`${BASE_URL}/dashboard/stats`, { headers: VIEWER_HEADERS, tags: { name: 'GET /dashboard/stats' } });
  check(res, { 'GET /dashboard/stats → 200': (r) => r.status === 200 });
}

/** Logs where the queues stand after the run (k6 prints console.log lines). */
export function teardown(data) {
  const res = http.get(`${BASE_URL}/dashboard/stats`, { headers: VIEWER_HEADERS, tags: { name: 'teardown: stats' } });
  if (res.status === 200) console.log(`since ${data.startedAt}: totals ${JSON.stringify(res.json('totals'))}, audit lag ${res.json('auditLagMs')} ms`);
}
