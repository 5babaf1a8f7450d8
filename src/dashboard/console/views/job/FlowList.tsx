import type { Flow } from '../../api/types';
import { flowLines } from './flow-graph';
import { FlowJobStatus, JobRefLink, MAX_FLOW_ROWS, MoreRows } from './flow-bits';

/** Deeper levels than this are drawn at this indent (the depth is still written). */
const MAX_INDENT = 8;

/**
 * A flow as an indented list: roots first, each job below everything it waits for and indented by
 * its depth, with its status and what it waits for; the job of the page is marked (aria-current).
 * At most {@link MAX_FLOW_ROWS} lines.
 */
export function FlowList({ flow, currentId }: { flow: Flow; currentId: string }) {
  const lines = flowLines(flow);
  const shown = lines.slice(0, MAX_FLOW_ROWS);
  return (
    <>
      <ol className="flow-list" aria-label="Jobs of the flow by depth">
        {shown.map(({ job, depth, waitsFor }) => {
          const current = job.id === currentId;
          return (
            <li key={job.id} className={`d${Math.min(depth, MAX_INDENT)}${current ? ' current' : ''}`} data-depth={depth} data-ref={job.ref ?? ''} aria-current={current ? 'true' : undefined}>
              <span className="sr-only">depth {depth}: </span>
              {current ? <strong className="mono">{job.ref ?? job.id.slice(-12)}</strong> : <JobRefLink id={job.id} name={job.ref ?? job.id.slice(-12)} />} <FlowJobStatus status={job.status} />
              {current && <span className="muted"> (this job)</span>}
              {waitsFor.length > 0 && <span className="muted"> · after {waitsFor.slice(0, 10).join(', ')}{waitsFor.length > 10 ? ` and ${waitsFor.length - 10} more` : ''}</span>}
            </li>
          );
        })}
      </ol>
      <MoreRows shown={shown.length} total={lines.length} flowId={flow.flowId} />
    </>
  );
}
