import { startTestApi, TestApi } from '../support/http';

describe('API rate limit (API_RATE_LIMIT_MAX) (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-ratelimit', { API_RATE_LIMIT_MAX: '5', API_RATE_LIMIT_WINDOW_MS: '60000' });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('answers 429 rate_limited with Retry-After past the limit; ops endpoints stay exempt', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 7; i++) codes.push((await api.http.post('/jobs').send({ type: 'diag.echo' })).status);
    expect(codes.slice(0, 5)).toEqual([201, 201, 201, 201, 201]);
    const res = await api.http.post('/jobs').send({ type: 'diag.echo' });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(res.headers['x-request-id']).toBeTruthy();
    expect((await api.http.get('/healthz')).status).toBe(200);
  });
});
