import { Link } from 'react-router';
import { ApiError } from '../../api/client';
import { JOB_STATUSES, type FlowJob, type Job } from '../../api/types';
import { QueryState, Section, StatusBadge } from '../../components/bits';
import { DataTable, type Column } from '../../components/DataTable';
import { useFlow } from '../../hooks/flows';
import { countsText, dependentsOf, refOf } from './flow-graph';
import { flowExplorerUrl, FlowJobStatus, JobRefLink, MAX_FLOW_ROWS, MoreRows } from './flow-bits';
import { FlowList } from './FlowList';

function dependentColumns(nameOf: (id: string) => string, jobId: string): Column<FlowJob>[] {
  return [
    { id: 'ref', header: 'Job', cell: (c) => <JobRefLink id={c.row.original.id} name={refOf(c.row.original)} /> },
    { id: 'status', header: 'Status', cell: (c) => <FlowJobStatus status={c.row.original.status} /> },
    {
      id: 'others',
      header: 'Also waits for',
      cell: (c) => {
        const others = c.row.original.dependsOn.filter((d) => d !== jobId);
        return others.length ? <span className="clip">{others.slice(0, 10).map(nameOf).join(', ')}{others.length > 10 ? '…' : ''}</span> : <span className="muted">—</span>;
      },
      meta: { optional: true },
    },
  ];
}

/**
 * A flow job's dependents (the jobs of its flow that wait for it) and its flow (status, counts,
 * the jobs by depth, the explorer filtered to it), from `GET /flows/:id`. A flow whose record is
 * gone (404: kept 7 days after it finished) is said so; other errors are shown as they came.
 */
export function FlowSections({ job }: { job: Job & { flowId: string } }) {
  const q = useFlow(job.flowId, job.status);
  const gone = q.error instanceof ApiError && q.error.status === 404;
  const explorer = <Link to={flowExplorerUrl(job.flowId)}>Jobs of this flow in the explorer</Link>;
  if (!q.data) {
    return (
      <Section title="Flow">
        <p>
          Flow <span className="mono">{job.flowId}</span>
          {job.flowRef !== null && <> · this job is <span className="mono">{job.flowRef}</span></>}
        </p>
        {gone ? <p role="status">The flow's record is gone (it is kept 7 days after the flow finished): its dependents and graph cannot be shown.</p> : <QueryState q={q} what="the flow" />}
        <p>{explorer}</p>
      </Section>
    );
  }
  const flow = q.data;
  const names = new Map(flow.jobs.map((j) => [j.id, refOf(j)]));
  const dependents = dependentsOf(flow, job.id);
  return (
    <>
      <Section title="Dependents">
        <DataTable caption="Jobs that wait for it" columns={dependentColumns((id) => names.get(id) ?? id.slice(-12), job.id)} data={dependents.slice(0, MAX_FLOW_ROWS)} rowId={(j) => j.id} empty="No job of the flow waits for it." />
        <MoreRows shown={Math.min(dependents.length, MAX_FLOW_ROWS)} total={dependents.length} flowId={flow.flowId} />
      </Section>
      <Section title="Flow">
        <p>
          Flow <span className="mono">{flow.flowId}</span> <StatusBadge status={flow.status} /> · {flow.jobs.length.toLocaleString('en')} jobs: <span className="flow-counts">{countsText(flow.counts, JOB_STATUSES)}</span> · {explorer}
        </p>
        <FlowList flow={flow} currentId={job.id} />
      </Section>
    </>
  );
}
