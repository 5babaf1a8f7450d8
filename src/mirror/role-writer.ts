import type { DataSource } from 'typeorm';
import type { SluiceConfig } from '../config/config';
import type { Logger } from '../logging/logger';
import type { MirrorWriterMetrics } from './mirror-metrics';
import { MirrorWriter, type MirrorStores } from './mirror-writer';
import { formatRestoreReport, QueueRestorer, type RestoreStores } from '../restore/restore';

/** A queue whose mirror lock another process holds is not waited for long: that process is restoring it. */
export const RESTORE_LOCK_WAIT_MS = 2000;

/** The restore check of the audit role (src/restore/restore.ts), with its log lines tagged. */
export function roleRestorer(db: DataSource, stores: RestoreStores, log: Logger): QueueRestorer {
  return new QueueRestorer(db, stores, { lockWaitMs: RESTORE_LOCK_WAIT_MS, log: log.child({ component: 'restore' }), registriesFirst: true });
}

/**
 * The MirrorWriter the `audit` role runs — on the main thread
 * (MirrorService) or in its worker thread (src/mirror/writer-thread.ts): the
 * retention settings of the configuration, and the restore check on each
 * queue it takes over (logged when it rebuilt the queue), fed `metrics`
 * once per batch (src/mirror/mirror-metrics.ts). Not started.
 */
export function createRoleWriter(
  stores: MirrorStores & RestoreStores,
  db: DataSource,
  config: Pick<SluiceConfig, 'keepCompletedCount' | 'keepCompletedMs'>,
  writerId: string,
  log: Logger,
  restorer: QueueRestorer = roleRestorer(db, stores, log),
  onBatch?: (lagMs: number) => void,
  metrics?: MirrorWriterMetrics,
): MirrorWriter {
  return new MirrorWriter(
    stores,
    db,
    {
      writerId,
      keepCompletedCount: config.keepCompletedCount,
      keepCompletedMs: config.keepCompletedMs,
      onBatch,
      metrics,
      onAcquire: async (queue) => {
        const r = await restorer.ensureQueue(queue, { lockToken: writerId });
        if (r.action === 'restored') log.info({ queue, action: r.action, counts: r.counts }, `restore check: ${formatRestoreReport(r)}`);
      },
    },
    log.child({ component: 'audit', writerId }),
  );
}
