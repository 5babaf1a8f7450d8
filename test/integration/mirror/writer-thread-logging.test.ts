/**
 * The mirror writer thread logs the way the main thread does: pretty
 * (pino-pretty) when the process's stdout is a TTY, JSON lines otherwise
 * (src/logging/logger.ts prettyLogs, src/mirror/writer-thread.ts threadLogger).
 * A thread's own stdout is never a TTY, so it takes its parent's mode.
 * The real MirrorWriterThread from the build (dist/), on real Redis and a
 * fresh database, in a child process run once on a pseudo-terminal
 * (`script`) and once on a pipe.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { openTestDb, TestDb } from '../../support/postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from '../../support/redis';

const DIST = resolve(__dirname, '../../../dist');
let db: TestDb;
const prefixes: string[] = [];
beforeAll(async () => {
  if (!existsSync(`${DIST}/mirror/writer-thread.js`)) throw new Error('dist missing: run npx nest build first');
  db = await openTestDb('threadlog');
});
afterAll(async () => {
  const r = new Redis(REDIS_URL);
  for (const p of prefixes) await deleteByPrefix(r, p);
  r.disconnect();
  await db.close();
});

/** Node code: one main-thread line, then the real writer thread started and stopped. */
function program(prefix: string): string {
  return `
    const { loadConfig } = require(${JSON.stringify(`${DIST}/config/config.js`)});
    const { createLogger } = require(${JSON.stringify(`${DIST}/logging/logger.js`)});
    const { MirrorWriterThread } = require(${JSON.stringify(`${DIST}/mirror/writer-thread.js`)});
    const config = loadConfig({ REDIS_URL: ${JSON.stringify(REDIS_URL)}, REDIS_PREFIX: ${JSON.stringify(prefix)}, DATABASE_URL: ${JSON.stringify(db.url)}, LOG_LEVEL: 'info' });
    const log = createLogger('info');
    log.info('main thread line');
    const t = new MirrorWriterThread(${JSON.stringify(`${DIST}/mirror/writer-thread.js`)}, config, 'w-threadlog', log);
    t.start();
    t.whenReady().then(() => new Promise((r) => setTimeout(r, 500))).then(() => t.stop()).then(() => setTimeout(() => process.exit(0), 300));
  `;
}

function run(tty: boolean): Promise<string> {
  const prefix = testPrefix('threadlog');
  prefixes.push(prefix);
  const env = { PATH: process.env.PATH ?? '', NODE_ENV: 'development', TERM: 'dumb' };
  const file = join(mkdtempSync(join(tmpdir(), 'sluice-threadlog-')), 'program.js');
  writeFileSync(file, program(prefix));
  const [cmd, args] = tty ? ['script', ['-qec', `'${process.execPath}' '${file}'`, '/dev/null']] : [process.execPath, [file]];
  return new Promise((res, rej) =>
    execFile(cmd as string, args as string[], { env, timeout: 30_000 }, (err, stdout, stderr) => (err ? rej(new Error(`${err.message}\n${stdout}${stderr}`)) : res(stdout + stderr))),
  );
}

// Strips colours; splits pty (\r\n) and pipe lines.
const lines = (out: string) => out.replace(new RegExp(String.fromCharCode(27) + '\\[[0-9;]*m', 'g'), '').split(/\r?\n/).filter(Boolean);

test('in a TTY the thread logs pretty lines, like the main thread', async () => {
  const out = lines(await run(true));
  const main = out.find((l) => l.includes('main thread line'));
  const thread = out.find((l) => l.includes('audit writer thread started'));
  expect({ main, thread }).toEqual({ main: expect.stringMatching(/^\[[\d:.]+\] INFO \(sluice\/\d+\): main thread line$/), thread: expect.stringMatching(/^\[[\d:.]+\] INFO \(sluice\/\d+\): audit writer thread started$/) });
  expect(out.filter((l) => l.startsWith('{'))).toEqual([]);
}, 40_000);

test('on a pipe both log JSON lines', async () => {
  const out = lines(await run(false)).map((l) => JSON.parse(l));
  expect(out.find((l) => l.msg === 'main thread line')).toMatchObject({ level: 30, name: 'sluice' });
  expect(out.find((l) => l.msg === 'audit writer thread started')).toMatchObject({ level: 30, name: 'sluice', thread: 'audit-writer', writerId: 'w-threadlog' });
}, 40_000);
