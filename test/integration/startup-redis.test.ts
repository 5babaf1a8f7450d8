import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { killAll, SluiceProcess, startSluice } from '../support/process';
import { testPrefix } from '../support/redis';
import { makeTmpDir, RedisServer, removeDir, sparePorts, startRedisServer, stopAllRedisServers } from '../support/redis-server';

/**
 * API.md v1.3 "Security and recovery rules made exact": a Redis configuration
 * that cannot work — Sentinels that do not answer or do not know
 * REDIS_SENTINEL_NAME, an address that is no Sentinel, TLS to a plain node, a
 * database number the server lacks — stops the process within 30 s with a
 * non-zero exit and a message naming the variable, like an unreachable
 * REDIS_URL (src/redis/startup-check.ts). Real `node dist/main.js` processes,
 * started at once, on private ports: a private redis-server (plain, 16
 * databases), one more with CONFIG disabled, and a private Sentinel that
 * monitors the first as `known`.
 */
jest.setTimeout(120_000);

/** The contract's bound, ms. */
const STOPS_WITHIN_MS = 30_000;

let dir: string;
let plain: RedisServer;
/** Another plain one where CONFIG is disabled (as on managed Redis): the database is checked by SELECT alone. */
let noConfig: RedisServer;
let sentinel: RedisServer;
const procs: SluiceProcess[] = [];

beforeAll(async () => {
  dir = makeTmpDir('startup-redis');
  plain = await startRedisServer({ dir: join(dir, 'plain') });
  noConfig = await startRedisServer({ dir: join(dir, 'no-config'), extraArgs: ['--rename-command', 'CONFIG', 'config-renamed-away'] });
  const [sentinelPort] = await sparePorts(1);
  const conf = join(dir, 'sentinel', 'sentinel.conf');
  sentinel = new RedisServer({ port: sentinelPort, dir: join(dir, 'sentinel'), sentinelConfig: conf });
  writeFileSync(conf, `sentinel monitor known 127.0.0.1 ${plain.port} 1\n`);
  await sentinel.start();
});

afterAll(async () => {
  await killAll(procs);
  await stopAllRedisServers();
  removeDir(dir);
});

/** Starts a process with `env` and waits for its exit; the code, the time it took (ms) and what it printed. */
async function startAndWait(env: Record<string, string>): Promise<{ code: number | null; ms: number; output: string }> {
  const t0 = Date.now();
  const p = await startSluice({ REDIS_PREFIX: testPrefix('startup-redis'), ...env }, { waitReady: false });
  procs.push(p);
  // Bounded by the test: a process that hangs (the defect) fails the time assertion, not the test timeout.
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([p.exited, new Promise<null>((r) => (timer = setTimeout(() => r(null), STOPS_WITHIN_MS + 15_000)))]);
  clearTimeout(timer);
  const ms = Date.now() - t0;
  if (!ended) p.kill('SIGKILL');
  return { code: ended ? ended.code : null, ms, output: p.output() };
}

test('each configuration that cannot work stops the process within 30 s, exit ≠ 0, naming the variable', async () => {
  const [nothing, nothing2] = await sparePorts(2);
  const cases: [string, Record<string, string>, RegExp][] = [
    ['REDIS_URL with nothing listening', { REDIS_URL: `redis://127.0.0.1:${nothing}` }, new RegExp(`REDIS_URL=redis://127.0.0.1:${nothing}: cannot reach Redis`)],
    ['REDIS_SENTINELS with nothing listening', { REDIS_SENTINELS: `127.0.0.1:${nothing2}` }, new RegExp(`REDIS_SENTINELS=127.0.0.1:${nothing2}: no Sentinel answers`)],
    ['REDIS_SENTINELS naming a plain Redis', { REDIS_SENTINELS: `127.0.0.1:${plain.port}` }, new RegExp(`REDIS_SENTINELS=127.0.0.1:${plain.port}: .*not a Sentinel`)],
    [
      'REDIS_SENTINEL_NAME the Sentinels do not know',
      { REDIS_SENTINELS: `127.0.0.1:${sentinel.port}`, REDIS_SENTINEL_NAME: 'unknown-master' },
      /REDIS_SENTINEL_NAME="unknown-master": no Sentinel of REDIS_SENTINELS=.* knows a master by that name/,
    ],
    ['rediss:// to a plain node', { REDIS_URL: `rediss://127.0.0.1:${plain.port}` }, /REDIS_URL: rediss:\/\/ asks for TLS, but Redis at .* speaks plain TCP/],
    ['a database the server lacks (16 databases)', { REDIS_URL: `${plain.url}/20` }, /REDIS_URL: database 20 does not exist on .*: it has 16 \(0\.\.15\)/],
    [
      'a database the server lacks, CONFIG disabled',
      { REDIS_URL: `${noConfig.url}/16` },
      /REDIS_URL: database 16 cannot be selected on .*: ERR DB index is out of range/,
    ],
    ['a database number beyond any server (refused by the config)', { REDIS_URL: `${plain.url}/100000` }, /REDIS_URL is invalid: the database number "100000"/],
  ];
  const results = await Promise.all(cases.map(([, env]) => startAndWait(env)));
  // One comparison for every case (a failure shows them all); `named` holds the output's end when the message is missing.
  const seen = results.map((r, i) => ({
    case: cases[i][0],
    exitedNonZero: r.code !== null && r.code !== 0,
    within30s: r.ms < STOPS_WITHIN_MS,
    named: cases[i][2].test(r.output) || r.output.slice(-600),
  }));
  expect(seen).toEqual(cases.map(([name]) => ({ case: name, exitedNonZero: true, within30s: true, named: true })));
  // None went on to start its roles.
  expect(results.every((r) => !r.output.includes('sluice listening'))).toBe(true);
});

test('the same server with a database it has starts (the check refuses only what cannot work)', async () => {
  const prefix = testPrefix('startup-redis-ok');
  const p = await startSluice({ REDIS_PREFIX: prefix, REDIS_URL: `${plain.url}/15` });
  procs.push(p);
  const r = await fetch(`${p.url()}/readyz`);
  expect(r.status).toBe(200);
  // It runs in database 15: the worker registered itself there, not in database 0.
  const admin = plain.client();
  try {
    await admin.select(15);
    expect((await admin.keys(`${prefix}*`)).length).toBeGreaterThan(0);
    await admin.select(0);
    expect(await admin.keys(`${prefix}*`)).toEqual([]);
  } finally {
    admin.disconnect();
  }
  p.kill('SIGTERM');
  expect((await p.exited).code).toBe(0);
});
