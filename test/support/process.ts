import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { PG_BASE_URL } from './postgres';
import { REDIS_URL } from './redis';
import { REFUSED_DATABASES } from './no-default-database';
import { TEST_RUN } from './run';

const MAIN = resolve(__dirname, '../../dist/main.js');
/**
 * The database of processes whose test passes none: one per jest run
 * (`sluice_test_processes_<run>`, test/support/run.ts), created by the first
 * process that needs it and dropped by the run's global teardown
 * (test/support/global-teardown.js), so parallel runs never share it.
 */
export const PROCESS_TEST_DB = (() => {
  const u = new URL(PG_BASE_URL);
  u.pathname = `/sluice_test_processes_${TEST_RUN}`;
  return u.toString();
})();


/** A Sluice process started from the build (dist/main.js) with real signals. */
export interface SluiceProcess {
  proc: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves when a line matching `re` has been written (rejects after timeoutMs). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
  /** Base URL of its HTTP server (every role listens; PORT=0 by default), from its "sluice listening" line. */
  url(): string;
}

/**
 * Starts `node dist/main.js` with test defaults (ROLE=worker, diagnostic
 * handlers on, JSON logs) plus `env`. Needs `npm run build` first (npm test
 * does it). Waits until the process logs that it started.
 */
export async function startSluice(env: Record<string, string>, opts: { waitReady?: boolean } = {}): Promise<SluiceProcess> {
  // The guard of no-default-database.ts does not reach a child process: check its URL here.
  const dbName = env.DATABASE_URL && decodeURIComponent(new URL(env.DATABASE_URL).pathname.slice(1));
  if (dbName && REFUSED_DATABASES.has(dbName)) {
    throw new Error(`startSluice: DATABASE_URL names the user's database "${dbName}": pass a fresh one (test/support/postgres.ts)`);
  }
  if (!existsSync(MAIN)) throw new Error(`${MAIN} missing: run npm run build first`);
  const proc = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      REDIS_URL,
      // Roles that need PostgreSQL (scheduler, audit, api) get a test database
      // of their own unless the test passes one: never the user's `sluice`.
      DATABASE_URL: PROCESS_TEST_DB,
      ROLE: 'worker',
      // Every role listens (ops endpoints): a free port each, so processes never collide.
      PORT: '0',
      DIAGNOSTIC_HANDLERS: 'true',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const l of [...listeners]) l();
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    proc.on('exit', (code, signal) => {
      for (const l of [...listeners]) l();
      res({ code, signal });
    }),
  );
  const waitFor = (re: RegExp, timeoutMs = 15000) =>
    new Promise<void>((res, rej) => {
      const check = () => {
        if (re.test(out)) {
          listeners.delete(check);
          clearTimeout(t);
          res();
        } else if (proc.exitCode !== null || proc.signalCode !== null) {
          listeners.delete(check);
          clearTimeout(t);
          rej(new Error(`process exited before ${re}: ${out.slice(-2000)}`));
        }
      };
      const t = setTimeout(() => {
        listeners.delete(check);
        rej(new Error(`timeout waiting for ${re}; output: ${out.slice(-2000)}`));
      }, timeoutMs);
      listeners.add(check);
      check();
    });
  const url = () => {
    const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"sluice listening/.exec(out);
    if (!m) throw new Error(`no "sluice listening" line yet: ${out.slice(-2000)}`);
    return m[1];
  };
  const p: SluiceProcess = { proc, output: () => out, waitFor, exited, kill: (s = 'SIGTERM') => proc.kill(s), url };
  if (opts.waitReady !== false) await waitFor(/"msg":"sluice listening/);
  return p;
}

/** Kills every given process that still runs (SIGKILL) and waits for the exits. */
export async function killAll(procs: (SluiceProcess | undefined)[]): Promise<void> {
  await Promise.all(
    procs.filter((p): p is SluiceProcess => !!p && p.proc.exitCode === null && p.proc.signalCode === null).map((p) => {
      p.kill('SIGKILL');
      return p.exited;
    }),
  );
}
