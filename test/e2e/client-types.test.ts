import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApi, type TestApi } from '../support/http';

/**
 * clients/typescript/src/schema.d.ts (committed) is what openapi-typescript
 * makes of the live document: a route or schema changed without
 * `npm run generate -w @sluice/client` fails here.
 */
const PKG = join(__dirname, '../../clients/typescript');
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi('client-types');
});
afterAll(() => api?.close());

test('the committed client types are those of the served OpenAPI document (else: npm run generate -w @sluice/client)', async () => {
  const res = await api.http.get('/docs-json');
  expect(res.status).toBe(200);
  const fresh = execFileSync(process.execPath, [join(PKG, 'scripts/types.mjs')], { input: JSON.stringify(res.body), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  expect(fresh).toContain('export interface paths');
  const committed = readFileSync(join(PKG, 'src/schema.d.ts'), 'utf8');
  // The first differing line says what is stale (a whole-file diff would drown it).
  const a = committed.split('\n');
  const b = fresh.split('\n');
  const at = a.findIndex((line, i) => line !== b[i]);
  const firstDiff = at === -1 && a.length === b.length ? null : { line: (at === -1 ? Math.min(a.length, b.length) : at) + 1, committed: a[at] ?? '<end>', fresh: b[at] ?? '<end>' };
  expect(firstDiff).toBeNull();
});
