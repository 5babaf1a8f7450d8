import { Link } from 'react-router';
import { StatusBadge } from '../../components/bits';

/** At most this many rows of dependencies, dependents or flow jobs are drawn (a flow may hold 10,000 jobs). */
export const MAX_FLOW_ROWS = 200;

/** A flow job's status; `gone` when neither Redis nor the history has the job any more (status null). */
export function FlowJobStatus({ status }: { status: string | null }) {
  return status === null ? <span className="badge s-gone" title="neither Redis nor the history has this job any more">gone</span> : <StatusBadge status={status} />;
}

/** A link to a job's page named by its ref (the id in full for screen readers and the tooltip). */
export function JobRefLink({ id, name }: { id: string; name: string }) {
  return (
    <Link className="mono" to={`/jobs/${id}`} title={id}>
      {name}
    </Link>
  );
}

/** The explorer filtered to one flow's jobs. */
export const flowExplorerUrl = (flowId: string) => `/jobs?flowId=${encodeURIComponent(flowId)}`;

/** "Showing 200 of 10,000 …" under a capped list, with the explorer for the rest; nothing when all are shown. */
export function MoreRows({ shown, total, flowId }: { shown: number; total: number; flowId: string }) {
  if (total <= shown) return null;
  return (
    <p className="muted">
      Showing {shown.toLocaleString('en')} of {total.toLocaleString('en')}; <Link to={flowExplorerUrl(flowId)}>all of the flow's jobs in the explorer</Link>.
    </p>
  );
}

/** Stored data as one line of text, cut at `max` characters (the cell clips it further). */
export function shortText(v: unknown, max = 200): string {
  const s = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
