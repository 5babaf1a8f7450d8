import type { JobDependency } from '../../api/types';
import { QueryState, Section } from '../../components/bits';
import { DataTable, type Column } from '../../components/DataTable';
import { useJobDependencies } from '../../hooks/flows';
import { FlowJobStatus, JobRefLink, MAX_FLOW_ROWS, MoreRows, shortText } from './flow-bits';

/** What a dependency ended with: its result once completed, its last error once failed or cancelled. */
function outcome(d: JobDependency) {
  if (d.status === 'completed') return <span className="clip mono">{shortText(d.result) || '—'}</span>;
  if (d.lastError) return <span className="clip err">{shortText(d.lastError)}</span>;
  return <span className="muted">—</span>;
}

const columns: Column<JobDependency>[] = [
  { id: 'ref', header: 'Job', cell: (c) => <JobRefLink id={c.row.original.id} name={c.row.original.ref} /> },
  { id: 'status', header: 'Status', cell: (c) => <FlowJobStatus status={c.row.original.status} /> },
  { id: 'outcome', header: 'Result or last error', cell: (c) => outcome(c.row.original), meta: { optional: true } },
];

/**
 * A flow job's dependencies (`GET /jobs/:id/dependencies`): each one's ref (a link), status and
 * result or last error. Read from the job, so it works after the flow's record is gone.
 */
export function DependenciesSection({ jobId, flowId, unfinished }: { jobId: string; flowId: string; unfinished: boolean }) {
  const q = useJobDependencies(jobId, true, unfinished);
  const items = q.data?.items ?? [];
  return (
    <Section title="Dependencies">
      <QueryState q={q} what="its dependencies" />
      {q.data && <DataTable caption="Jobs it waits for" columns={columns} data={items.slice(0, MAX_FLOW_ROWS)} rowId={(d) => d.id} empty="It waits for no job: a root of its flow." />}
      <MoreRows shown={Math.min(items.length, MAX_FLOW_ROWS)} total={items.length} flowId={flowId} />
    </Section>
  );
}
