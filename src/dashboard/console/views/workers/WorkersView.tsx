import { Link } from 'react-router';
import type { Worker } from '../../api/types';
import { QueryState, Section, StatusBadge, Time } from '../../components/bits';
import { DataTable, type Column } from '../../components/DataTable';
import { useWorkers } from '../../hooks/dashboard';

/** The jobs a worker holds (`GET /workers` gives at most 100 ids), each a link to its page. */
function HeldJobs({ w }: { w: Worker }) {
  const ids = w.jobs ?? [];
  if (ids.length === 0) return <span className="muted">none</span>;
  return (
    <span className="held">
      {ids.map((id) => (
        <Link key={id} to={`/jobs/${id}`} className="mono" title={id}>
          {id.slice(-12)}
        </Link>
      ))}
    </span>
  );
}

const columns: Column<Worker>[] = [
  { id: 'host', header: 'Worker', cell: (c) => (c.row.original.kind === 'external' ? c.row.original.id : `${c.row.original.hostname}:${c.row.original.pid}`) },
  { id: 'kind', header: 'Kind', cell: (c) => c.row.original.kind },
  { id: 'status', header: 'Status', cell: (c) => <StatusBadge status={c.row.original.status} /> },
  { id: 'active', header: 'Active / concurrency', cell: (c) => (c.row.original.kind === 'external' ? c.row.original.active : `${c.row.original.active} / ${c.row.original.concurrency}`) },
  { id: 'jobs', header: 'Jobs held', cell: (c) => <HeldJobs w={c.row.original} /> },
  { id: 'queues', header: 'Queues', cell: (c) => c.row.original.queues.join(', '), meta: { optional: true } },
  { id: 'beat', header: 'Last heartbeat / claim', cell: (c) => <Time at={c.row.original.kind === 'external' ? (c.row.original.lastClaimAt ?? c.row.original.lastHeartbeatAt) : c.row.original.lastHeartbeatAt} /> },
  { id: 'started', header: 'Started', cell: (c) => <Time at={c.row.original.startedAt} />, meta: { optional: true } },
  { id: 'id', header: 'Id', cell: (c) => <span className="mono">{c.row.original.id}</span>, meta: { optional: true } },
];

/** `/ui/workers`: worker processes and external workers (`GET /workers`), the jobs each holds; dead ones greyed. */
export function WorkersView() {
  const q = useWorkers();
  return (
    <>
      <h1>Workers</h1>
      <Section title="Processes and external workers">
        <QueryState q={q} what="workers" />
        {q.data && <DataTable caption="Workers" columns={columns} data={q.data} rowId={(w) => w.id} rowClass={(w) => (w.status === 'dead' ? 'dead' : undefined)} empty="No worker has registered." />}
      </Section>
    </>
  );
}
