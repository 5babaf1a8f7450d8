import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import type { RedisClient } from '../../src/redis/connection';
import type { SluiceProcess } from './process';
import { readEvents, sleep } from './redis';

/**
 * Helpers for timing and recovery tests: Redis time, polling for events in a
 * queue's stream, telling when a worker is blocked, and a private
 * redis-server that a test may kill and restart.
 */

/** Redis's clock (TIME), epoch ms: the clock every script uses. */
export async function redisNow(redis: RedisClient): Promise<number> {
  const [s, us] = await (redis as Redis).time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** One entry of a queue's events stream, with `at` (Redis ms) as a number. */
export interface StreamEvent extends Record<string, string | number> {
  e: string;
  j: string;
  at: number;
}

/** Every event of the stream, optionally only those of one job, oldest first. */
export async function events(redis: RedisClient, eventsKey: string, jobId?: string): Promise<StreamEvent[]> {
  const all = (await readEvents(redis, eventsKey)).map((e) => ({ ...e, at: Number(e.at) }) as StreamEvent);
  return jobId ? all.filter((e) => e.j === jobId) : all;
}

/**
 * Polls `check` every `intervalMs` until it returns a value other than
 * undefined/false, and returns it.
 * @throws Error naming `what` after `timeoutMs`.
 */
export async function waitUntil<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 15000, intervalMs = 25): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Waits until the stream holds an event matching `pred`, and returns it. */
export function waitForEvent(
  redis: RedisClient,
  eventsKey: string,
  pred: (e: StreamEvent) => boolean,
  what: string,
  timeoutMs = 15000,
): Promise<StreamEvent> {
  return waitUntil(what, async () => (await events(redis, eventsKey)).find(pred), timeoutMs);
}

/** The worker id a Sluice process logged in its "worker started" line. */
export async function workerIdOf(p: SluiceProcess): Promise<string> {
  await p.waitFor(/"msg":"worker started"/);
  const line = p.output().split('\n').find((l) => l.includes('"msg":"worker started"')) as string;
  return JSON.parse(line).workerId as string;
}

/**
 * Waits until the worker's wake connection (named `sluice-wake-<id>`) is
 * blocked in BLPOP: the worker is idle, waiting for work.
 */
export function waitBlocked(redis: RedisClient, workerId: string, timeoutMs = 15000): Promise<true> {
  return waitUntil(`worker ${workerId} blocked in BLPOP`, async () => {
    const list = (await (redis as Redis).client('LIST')) as string;
    return list.split('\n').some((l) => l.includes(` name=sluice-wake-${workerId} `) && / flags=\w*b/.test(l) && l.includes(' cmd=blpop')) || undefined;
  }, timeoutMs);
}

/** A TCP port on 127.0.0.1 that nobody listens on, from `from` upwards. */
export async function freePort(from = 6391): Promise<number> {
  for (let port = from; port < from + 200; port++) {
    const ok = await new Promise<boolean>((res) => {
      const srv = createServer();
      srv.once('error', () => res(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
    });
    if (ok) return port;
  }
  throw new Error(`no free port in ${from}..${from + 199}`);
}

/** A redis-server of the test's own, with AOF (fsync always) in a temporary folder. */
export interface PrivateRedis {
  port: number;
  url: string;
  dir: string;
  /** Starts the server (again, on the same port and folder); resolves once it answers PING. */
  start(): Promise<void>;
  /** Kills the server (SIGKILL by default) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Kills the server and removes its folder. Safe to call twice. */
  destroy(): Promise<void>;
}

/** Servers still running, killed if the test process exits without destroy(). */
const running = new Set<ChildProcess>();
process.on('exit', () => running.forEach((p) => p.kill('SIGKILL')));

/**
 * Creates (does not start) a private redis-server on a free port ≥ 6391
 * (from a random start, so parallel test files rarely race for one port).
 */
export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort(6391 + Math.floor(Math.random() * 400));
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  let proc: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      proc.kill(signal);
      await exited;
    }
    proc = null;
  };
  const self: PrivateRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    async start() {
      const p = spawn('redis-server', [
        '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
        '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--daemonize', 'no', '--loglevel', 'warning',
      ], { stdio: 'ignore' });
      proc = p;
      running.add(p);
      exited = new Promise((res) => p.once('exit', () => {
        running.delete(p);
        res();
      }));
      const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
      try {
        await waitUntil(`redis-server on ${port}`, async () => {
          if (p.exitCode !== null) throw new Error(`redis-server on port ${port} exited with ${p.exitCode}`);
          try {
            if (probe.status === 'wait') await probe.connect();
            return (await probe.ping()) === 'PONG' || undefined;
          } catch {
            return undefined;
          }
        }, 10000, 50);
      } finally {
        probe.disconnect();
      }
    },
    kill,
    async destroy() {
      await kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return self;
}

/** CPU time (user + system) a process has used so far, ms (Linux /proc). */
export function cpuTimeMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticksPerSecond = 100; // USER_HZ, 100 on Linux
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}
