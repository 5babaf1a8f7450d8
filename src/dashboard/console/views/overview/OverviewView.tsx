import { Link } from 'react-router';
import type { Queue } from '../../api/types';
import { duration, QueryState, Section } from '../../components/bits';
import { DataTable, type Column } from '../../components/DataTable';
import { useQueueLatencies, useStats, useWorkers } from '../../hooks/dashboard';
import { useQueues } from '../../hooks/queues';
import { needsAttention } from './attention';
import { ThroughputChart } from './ThroughputChart';

type Row = Queue & { latencyMs: number | undefined };

const columns: Column<Row>[] = [
  { id: 'name', header: 'Queue', cell: (c) => <Link to={`/queues/${encodeURIComponent(c.row.original.name)}`}>{c.row.original.name}</Link> },
  { id: 'state', header: 'State', cell: (c) => (c.row.original.paused ? <span className="badge s-paused">paused</span> : c.row.original.external ? 'external' : 'running') },
  { id: 'waiting', header: 'Waiting', cell: (c) => c.row.original.counts.waiting },
  { id: 'delayed', header: 'Delayed', cell: (c) => c.row.original.counts.delayed, meta: { optional: true } },
  { id: 'active', header: 'In flight / cap', cell: (c) => `${c.row.original.counts.active} / ${c.row.original.maxConcurrency ?? '∞'}` },
  { id: 'failed', header: 'Failed', cell: (c) => <Link to={`/jobs?queue=${encodeURIComponent(c.row.original.name)}&status=failed`}>{c.row.original.counts.failed}</Link> },
  { id: 'completed', header: 'Completed', cell: (c) => c.row.original.counts.completed, meta: { optional: true } },
  { id: 'latency', header: 'Oldest waiting', cell: (c) => (c.row.original.latencyMs === undefined ? '—' : duration(c.row.original.latencyMs)) },
];

/** `/ui/`: queues at a glance, throughput, workers, audit lag, and what needs attention. */
export function OverviewView() {
  const stats = useStats();
  const queues = useQueues();
  const workers = useWorkers();
  const latency = useQueueLatencies();
  const attention = needsAttention(stats.data, queues.data, workers.data, latency.data);
  const alive = workers.data?.filter((w) => w.status !== 'dead') ?? [];
  const capacity = alive.reduce((a, w) => a + w.concurrency, 0);
  const rows: Row[] = (queues.data ?? []).map((q) => ({ ...q, latencyMs: latency.data?.[q.name] }));
  return (
    <>
      <h1>Overview</h1>
      <Section title="Needs attention">
        {attention.length === 0 ? (
          <p className="ok">Nothing needs attention.</p>
        ) : (
          <ul className="attention">
            {attention.map((a) => (
              <li key={a.key}>
                <Link to={a.to}>{a.text}</Link>
              </li>
            ))}
          </ul>
        )}
      </Section>
      <div className="tiles">
        <div className="tile">
          <span className="muted">In flight / capacity</span>
          <strong>
            {stats.data?.totals.active ?? '…'} / {workers.data ? capacity : '…'}
          </strong>
        </div>
        <div className="tile">
          <span className="muted">Workers alive</span>
          <strong>{workers.data ? `${alive.length} of ${workers.data.length}` : '…'}</strong>
        </div>
        <div className="tile">
          <span className="muted">Per minute</span>
          <strong>{stats.data ? `${stats.data.throughput.completedPerMin} done · ${stats.data.throughput.failedPerMin} failed` : '…'}</strong>
        </div>
        <div className="tile">
          <span className="muted">Audit lag</span>
          <strong>{stats.data ? duration(stats.data.auditLagMs) : '…'}</strong>
        </div>
      </div>
      <Section title="Queues">
        <QueryState q={queues} what="queues" />
        {latency.data === null && <p className="muted">Queue latency needs /metrics, which this server keeps behind METRICS_TOKEN.</p>}
        {queues.data && <DataTable caption="Queues" columns={columns} data={rows} rowId={(q) => q.name} empty="No queue yet." />}
      </Section>
      <Section title="Throughput">
        <ThroughputChart defer={!queues.data} />
      </Section>
    </>
  );
}
