import { BeforeApplicationShutdown, Inject, Module, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { Gauge } from 'prom-client';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB, PostgresModule } from '../postgres/postgres.module';
import { LOGGER } from '../config/config.module';
import type { Logger } from '../logging/logger';
import { SluiceMetrics } from '../metrics/sluice-metrics';
import { OplogBuffer } from '../core/ports/oplog';
import { OplogController } from './oplog.controller';
import { OplogFlusher } from './oplog-flusher';

/**
 * The operator audit log (api role): `GET /audit-log` and the flusher that
 * moves the Redis buffer into PostgreSQL. The write path (the onResponse
 * hook) is registered by src/server/http-app.ts (registerOperatorAudit).
 * Metrics: `sluice_operator_audit_buffered` (records waiting in Redis) and
 * `sluice_operator_audit_dropped` (records dropped because the buffer was full, all replicas, since the counter was made).
 */
@Module({
  imports: [PostgresModule],
  controllers: [OplogController],
  providers: [
    {
      provide: OplogFlusher,
      inject: [OplogBuffer, POSTGRES_DB, LOGGER],
      useFactory: (buffer: OplogBuffer, db: DataSource, log: Logger) => new OplogFlusher(buffer, db, log),
    },
  ],
  exports: [OplogFlusher],
})
export class OplogModule implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(
    private readonly flusher: OplogFlusher,
    @Optional() @Inject(SluiceMetrics) private readonly metrics?: SluiceMetrics,
  ) {}

  onApplicationBootstrap(): void {
    this.flusher.start();
    if (!this.metrics) return;
    const flusher = this.flusher;
    let last: Promise<{ buffered: number; dropped: number }> | null = null;
    const read = () => (last ??= flusher.bufferState().finally(() => setImmediate(() => (last = null))));
    const gauge = (name: string, help: string, pick: (s: { buffered: number; dropped: number }) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.metrics!.registry],
        async collect() {
          try {
            this.set(pick(await read()));
          } catch {
            /* Redis away: the gauge keeps its last value */
          }
        },
      });
    gauge('sluice_operator_audit_buffered', 'Operator audit records waiting in Redis to be written to PostgreSQL', (s) => s.buffered);
    gauge('sluice_operator_audit_dropped', 'Operator audit records dropped because the Redis buffer was full (all replicas)', (s) => s.dropped);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.flusher.stop();
  }
}
