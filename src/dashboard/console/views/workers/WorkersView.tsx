import type { Worker } from '../../api/types';
import { QueryState, Section, StatusBadge, Time } from '../../components/bits';
import { DataTable, type Column } from '../../components/DataTable';
import { useWorkers } from '../../hooks/dashboard';

const columns: Column<Worker>[] = [
  { id: 'host', header: 'Worker', cell: (c) => `${c.row.original.hostname}:${c.row.original.pid}` },
  { id: 'status', header: 'Status', cell: (c) => <StatusBadge status={c.row.original.status} /> },
  { id: 'active', header: 'Active / concurrency', cell: (c) => `${c.row.original.active} / ${c.row.original.concurrency}` },
  { id: 'queues', header: 'Queues', cell: (c) => c.row.original.queues.join(', '), meta: { optional: true } },
  { id: 'beat', header: 'Last heartbeat', cell: (c) => <Time at={c.row.original.lastHeartbeatAt} /> },
  { id: 'started', header: 'Started', cell: (c) => <Time at={c.row.original.startedAt} />, meta: { optional: true } },
  { id: 'id', header: 'Id', cell: (c) => <span className="mono">{c.row.original.id}</span>, meta: { optional: true } },
];

/** `/ui/workers`: every worker process with its heartbeat (`GET /workers`). */
export function WorkersView() {
  const q = useWorkers();
  return (
    <>
      <h1>Workers</h1>
      <Section title="Worker processes">
        <QueryState q={q} what="workers" />
        {q.data && <DataTable caption="Workers" columns={columns} data={q.data} rowId={(w) => w.id} empty="No worker has registered." />}
      </Section>
    </>
  );
}
