import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { SluiceConfig } from '../config/config';
import { createLogger, Logger, prettyLogs } from '../logging/logger';
import { createRedis } from '../redis/connection';
import { createRedisStores } from '../redis/stores';
import { MirrorMetricsBuffer, isMirrorMetricsDelta, type MirrorMetrics } from './mirror-metrics';
import { createDataSource } from '../postgres/data-source';
import { createRoleWriter } from './role-writer';
import { WriterPriority } from './writer-priority';

/** What the thread needs of the configuration (structured-cloned into it). */
export type WriterThreadConfig = Pick<
  SluiceConfig,
  | 'redisUrl'
  | 'redisClusterNodes'
  | 'redisSentinel'
  | 'redisPrefix'
  | 'databaseUrl'
  | 'logLevel'
  | 'maxRetries'
  | 'idempotencyTtlMs'
  | 'keepCompletedCount'
  | 'keepCompletedMs'
  | 'auditThreadNice'
>;

interface ThreadData {
  kind: 'sluice-audit-writer';
  config: WriterThreadConfig;
  writerId: string;
  /** The parent's log mode (prettyLogs()): the thread's stdout is never a TTY, so it cannot tell itself. */
  prettyLogs: boolean;
}

/** The thread's logger: built like the main thread's (src/logging/logger.ts), in the parent's mode (pretty in a TTY, JSON otherwise). */
export function threadLogger(data: Pick<ThreadData, 'config' | 'prettyLogs'>): Logger {
  return createLogger(data.config.logLevel, undefined, data.prettyLogs).child({ thread: 'audit-writer' });
}

/**
 * The thread's young generation, MB: 32 MB semi-spaces (V8 sizes the young
 * generation at three semi-spaces), twice V8's default. A batch's rows and
 * strings live for about two batches (one is prepared while the previous is
 * in PostgreSQL), long enough to be copied by two scavenges and promoted at
 * the default size. Drain runs of the writer (on a main thread, with
 * --max-semi-space-size=32) took 10–25 % less CPU per event in Node
 * (docs/benchmarks.md); 64 MB semi-spaces were no better. The workers'
 * thread keeps V8's default.
 */
const WRITER_YOUNG_GENERATION_MB = 96;

/** Wait before a thread that died is started again, ms. */
const RESTART_DELAY_MS = 1_000;

/** How often the thread sends its writer's metrics to the parent (one message, the counts added up), ms. */
export const METRICS_INTERVAL_MS = 1_000;

/**
 * The mirror writer of a process that also runs workers or the API
 * (`ROLE=all`), in a worker thread of its own: reading, projecting and
 * encoding a batch is ~20 µs of CPU per event (~60 µs per job) in chunks of
 * up to ~15 ms, which on the workers' event loop would cap processing and
 * delay claims (docs/benchmarks.md). The thread has its own Redis client and
 * PostgreSQL pool; migrations and the start-up restore check stay in the main
 * thread. A thread that dies is logged and started again after 1 s; its
 * unacknowledged entries stay pending in the consumer group under the same
 * writer id, so the new thread takes its queues back and writes them again
 * (idempotent).
 */
export class MirrorWriterThread {
  private worker?: Worker;
  private stopping = false;
  private restartTimer?: NodeJS.Timeout;
  private readyPromise: Promise<void> = Promise.resolve();

  /**
   * @param file the compiled thread entry (this module as `.js`).
   * @param metrics gets the counts the thread's writer reports (MirrorMetricsDelta messages, about one a second).
   * @throws nothing; a thread that fails to start is retried.
   */
  constructor(
    private readonly file: string,
    private readonly config: WriterThreadConfig,
    readonly writerId: string,
    private readonly log: Logger,
    private readonly metrics?: MirrorMetrics,
  ) {}

  start(): void {
    this.stopping = false;
    const data: ThreadData = { kind: 'sluice-audit-writer', config: this.config, writerId: this.writerId, prettyLogs: prettyLogs() };
    const w = new Worker(this.file, { workerData: data, resourceLimits: { maxYoungGenerationSizeMb: WRITER_YOUNG_GENERATION_MB } });
    this.worker = w;
    this.readyPromise = new Promise((resolve) => {
      w.on('message', (m) => {
        if (m === 'started') resolve();
        else if (isMirrorMetricsDelta(m)) this.metrics?.apply(m);
      });
      w.once('exit', () => resolve());
    });
    w.on('error', (e) => this.log.error({ err: e.message }, 'audit writer thread failed'));
    w.on('exit', (code) => {
      if (this.worker === w) this.worker = undefined;
      if (this.stopping) return;
      this.log.error({ code }, 'audit writer thread exited: starting it again');
      this.restartTimer = setTimeout(() => this.start(), RESTART_DELAY_MS);
      this.restartTimer.unref?.();
    });
  }

  /** Resolves once the current thread has its clients up and its writer started (or has exited). */
  whenReady(): Promise<void> {
    return this.readyPromise;
  }

  /**
   * Asks the thread to stop after its batch in progress (acks done, queues
   * released) and waits for it; terminated after `timeoutMs`.
   */
  async stop(timeoutMs = 10_000): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const w = this.worker;
    if (!w) return;
    const exited = new Promise((r) => w.once('exit', r));
    w.postMessage('stop');
    const kill = setTimeout(() => void w.terminate(), timeoutMs);
    await exited;
    clearTimeout(kill);
  }
}

/** The thread's side: builds its own clients and runs an MirrorWriter until told to stop. */
async function runThread(data: ThreadData): Promise<void> {
  const { config, writerId } = data;
  const log = threadLogger(data);
  const redis = createRedis(config, { name: `sluice-audit-${writerId}` });
  // Blocking connections (the idle writer's XREAD) are made as the main thread makes them.
  const stores = createRedisStores(redis, config.redisPrefix, undefined, undefined, (name) => createRedis(config, { blocking: true, name }));
  // Migrations ran in the main thread before this one started.
  const db = createDataSource(config.databaseUrl, 4);
  await db.initialize();
  const priority = new WriterPriority(config.auditThreadNice ?? 0);
  if ((config.auditThreadNice ?? 0) > 0 && !priority.enabled) {
    log.info({}, 'audit writer thread keeps normal priority: this process may not raise a thread priority back (AUDIT_THREAD_NICE needs Linux and CAP_SYS_NICE or RLIMIT_NICE >= 20)');
  }
  // The writer's metrics go to the parent's registry: added up, one message a second.
  const report = () => {
    const d = buffer.take();
    if (d) parentPort!.postMessage(d);
  };
  const buffer = new MirrorMetricsBuffer(report);
  const metricsTimer = setInterval(report, METRICS_INTERVAL_MS);
  metricsTimer.unref();
  const writer = createRoleWriter(stores, db, config, writerId, log, undefined, (lagMs) => priority.observe(lagMs), buffer);
  parentPort!.on('message', (m) => {
    if (m !== 'stop') return;
    void (async () => {
      await writer.stop();
      clearInterval(metricsTimer);
      report();
      await db.destroy().catch(() => undefined);
      redis.disconnect();
      // In a worker thread this ends the thread, not the process.
      process.exit(0);
    })();
  });
  writer.start();
  parentPort!.postMessage('started');
  log.info({ writerId }, 'audit writer thread started');
}

if (!isMainThread && (workerData as ThreadData | null)?.kind === 'sluice-audit-writer') {
  runThread(workerData as ThreadData).catch((e) => {
    // Exits the thread with an error: the main thread logs it and starts a new one.
    console.error(`audit writer thread: ${(e as Error).stack ?? e}`);
    process.exit(1);
  });
}
