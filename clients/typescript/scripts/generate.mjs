#!/usr/bin/env node
// `npm run generate -w @sluice/client [-- path/to/openapi.json]`: writes
// src/schema.d.ts (committed) from the server's OpenAPI document.
// Without an argument it starts the repository's `node dist/main.js` (ROLE=api,
// AUTH=off, a free port, a throwaway REDIS_PREFIX; needs `npm run build`, Redis
// and PostgreSQL as for the server) and reads its GET /docs-json.
// test/e2e/client-types.test.ts fails while the committed file is stale.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { typesFromDocument } from './types.mjs';

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const root = path.resolve(pkg, '../..');
const out = path.join(pkg, 'src/schema.d.ts');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** The document served by a throwaway `node dist/main.js`. */
async function fromServer() {
  const main = path.join(root, 'dist/main.js');
  if (!fs.existsSync(main)) throw new Error(`${path.relative(process.cwd(), main)} is missing: npm run build first (or pass a saved document)`);
  const port = await freePort();
  const prefix = `sluice-client-types-${process.pid}`;
  const env = { ...process.env, ROLE: 'api', PORT: String(port), HOST: '127.0.0.1', AUTH: 'off', LOG_LEVEL: 'warn', REDIS_PREFIX: prefix };
  const child = spawn(process.execPath, [main], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    for (let i = 0; i < 300; i++) {
      if (child.exitCode !== null) throw new Error(`dist/main.js exited with ${child.exitCode} (Redis and PostgreSQL must run)`);
      const r = await fetch(`http://127.0.0.1:${port}/docs-json`).catch(() => null);
      if (r && r.ok) return await r.json();
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error('the server did not serve /docs-json within 30 s');
  } finally {
    child.kill('SIGTERM');
    await new Promise((res) => (child.exitCode !== null ? res() : child.once('exit', res)));
    await dropKeys(prefix);
  }
}

/** The throwaway server's few keys (the operator-audit stream) go with it; best effort. */
async function dropKeys(prefix) {
  const Redis = createRequire(path.join(root, 'package.json'))('ioredis');
  const r = new Redis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await r.connect();
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      if (keys.length) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
    // A key or two of a throwaway prefix is no harm.
  } finally {
    r.disconnect();
  }
}

const arg = process.argv[2];
const doc = arg ? JSON.parse(fs.readFileSync(arg, 'utf8')) : await fromServer();
if (typeof doc?.openapi !== 'string' || !doc.paths) throw new Error('not an OpenAPI document');
fs.writeFileSync(out, await typesFromDocument(doc));
process.stdout.write(`wrote ${path.relative(process.cwd(), out)}\n`);
