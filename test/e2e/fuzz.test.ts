import { startTestApi, TestApi } from '../support/http';

/** Deterministic PRNG (mulberry32), so a failing body can be reproduced from the seed. */
function rng(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIELDS = ['type', 'payload', 'queue', 'priority', 'delayMs', 'runAt', 'maxAttempts', 'backoff', 'timeoutMs', 'idempotencyKey', 'jobs', '__proto__', 'constructor', 'x'];

function randomValue(r: () => number, depth = 0): unknown {
  const k = Math.floor(r() * (depth > 3 ? 7 : 10));
  switch (k) {
    case 0: return null;
    case 1: return r() < 0.5;
    case 2: return [0, -1, 1e308, -1e308, 2 ** 53 + 1, 0.5, 100, 101, -101, 31536000001][Math.floor(r() * 10)];
    case 3: return ['', 'diag.echo', 'high', 'exponential', 'équipe', '\ud800', '😀'.repeat(50), 'a'.repeat(300), '2026-11-29T10:00:00Z', 'not a date'][Math.floor(r() * 10)];
    case 4: return Math.floor(r() * 1e6) - 5e5;
    case 5: return 'x'.repeat(Math.floor(r() * 40));
    case 6: return r();
    case 7: return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(r() * 5); i > 0; i--) o[FIELDS[Math.floor(r() * FIELDS.length)]] = randomValue(r, depth + 1);
      return o;
    }
  }
}

/** A valid body with one or two fields replaced by random values. */
function mutated(r: () => number): Record<string, unknown> {
  const b: Record<string, unknown> = { type: 'diag.echo', payload: { a: 1 }, queue: 'fuzz', priority: 1, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10 }, timeoutMs: 1000 };
  for (let i = 1 + Math.floor(r() * 2); i > 0; i--) b[FIELDS[Math.floor(r() * FIELDS.length)]] = randomValue(r);
  return b;
}

/** Raw request bodies: JSON text (possibly broken) or odd bytes. */
function randomBody(r: () => number, i: number): string {
  const k = i % 8;
  if (k === 0) return JSON.stringify(randomValue(r));
  if (k === 1) return JSON.stringify(mutated(r));
  if (k === 2) return JSON.stringify(mutated(r)).slice(0, Math.floor(r() * 60)); // truncated
  if (k === 3) return '{"type":"diag.echo","payload":' + '['.repeat(2000 + Math.floor(r() * 5000)) + ']'.repeat(10) + '}'; // deep, broken
  if (k === 4) return '{"type":"diag.echo","payload":{"d":' + '{"a":'.repeat(500) + '1' + '}'.repeat(500) + '}}'; // deep, valid
  if (k === 5) return JSON.stringify({ jobs: Array.from({ length: Math.floor(r() * 4) }, () => (r() < 0.5 ? mutated(r) : randomValue(r))) });
  if (k === 6) return Buffer.from(Array.from({ length: 1 + Math.floor(r() * 64) }, () => Math.floor(r() * 256))).toString('latin1');
  return '{"type":"diag.echo","payload":{"__proto__":{"polluted":true}}}';
}

describe('fuzz: 1,000 random bodies (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-fuzz');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('answers every one with 2xx or a 4xx envelope, never 5xx, and keeps serving', async () => {
    const r = rng(20261129);
    const statuses = new Map<number, number>();
    for (let i = 0; i < 1000; i++) {
      const body = randomBody(r, i);
      const path = i % 8 === 5 || r() < 0.1 ? '/jobs/batch' : '/jobs';
      const res = await fetch(api.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      if (res.status >= 500) throw new Error(`body #${i} → ${res.status}: ${text.slice(0, 300)}\nbody: ${body.slice(0, 300)}`);
      if (res.status >= 400) {
        const parsed = JSON.parse(text);
        expect(typeof parsed.error.code).toBe('string');
        expect(typeof parsed.error.requestId).toBe('string');
      }
    }
    // Most random bodies are invalid; the mix also holds some valid ones.
    const bad = [...statuses].filter(([s]) => s >= 400).reduce((n, [, c]) => n + c, 0);
    expect(bad).toBeGreaterThan(500);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const ok = await api.http.post('/jobs').send({ type: 'diag.echo', payload: { after: 'fuzz' } });
    expect(ok.status).toBe(201);
    expect((await api.http.get('/healthz')).status).toBe(200);
  });
});
