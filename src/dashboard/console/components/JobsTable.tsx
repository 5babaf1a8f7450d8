import { useState, type ReactNode } from 'react';
import { Link } from 'react-router';
import { cancelJob, retryJob } from '../api/jobs';
import { isUnfinished, type Job } from '../api/types';
import { ActionButton } from './ActionButton';
import { StatusBadge, Time } from './bits';
import { DataTable, type Column } from './DataTable';

const errorText = (j: Job) => j.lastError ?? '';

/** A flow job's flow (a link to the explorer filtered to it) and its ref there; — outside flows. */
function flowCell(j: Job) {
  if (!j.flowId) return <span className="muted">—</span>;
  return (
    <>
      <Link className="mono" to={`/jobs?flowId=${encodeURIComponent(j.flowId)}`} title={`the jobs of flow ${j.flowId}`}>
        {j.flowId.slice(-12)}
      </Link>
      {j.flowRef !== null && (
        <>
          {' '}
          <span className="muted clip">{j.flowRef}</span>
        </>
      )}
    </>
  );
}

/** Runs one action over many jobs, one request each, and says how it went. */
async function bulk(ids: string[], act: (id: string) => Promise<unknown>, verb: string): Promise<string> {
  let ok = 0;
  const failed: string[] = [];
  for (const id of ids) {
    try {
      await act(id);
      ok++;
    } catch (e) {
      failed.push(`${id.slice(-8)}: ${(e as Error).message}`);
    }
  }
  if (failed.length) throw new Error(`${verb} ${ok} of ${ids.length}; refused: ${failed.slice(0, 3).join('; ')}${failed.length > 3 ? '…' : ''}`);
  return `${verb} ${ok} of ${ids.length}`;
}

/**
 * A page of jobs: links to each, status, queue, concurrency key, flow (a link to its jobs), attempts, last error; with `canOperate`,
 * per-row cancel/retry (plus `rowAction` next to Retry) and a selection for bulk cancel/retry (confirmed).
 * `onChanged` is called after an action so the owner can refresh its page.
 */
export function JobsTable({ jobs, canOperate, onChanged, caption, rowAction }: { jobs: Job[]; canOperate: boolean; onChanged: () => void; caption: string; rowAction?: (j: Job) => ReactNode }) {
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const toggle = (id: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const columns: Column<Job>[] = [
    ...(canOperate
      ? [{ id: 'sel', header: () => <span className="sr-only">Select</span>, cell: (c: { row: { original: Job } }) => <input type="checkbox" aria-label={`Select job ${c.row.original.id}`} checked={selected.has(c.row.original.id)} onChange={() => toggle(c.row.original.id)} /> } as Column<Job>]
      : []),
    { id: 'id', header: 'Job', cell: (c) => <Link className="mono" to={`/jobs/${c.row.original.id}`}>{c.row.original.id.slice(-12)}</Link> },
    { id: 'type', header: 'Type', cell: (c) => c.row.original.type },
    { id: 'status', header: 'Status', cell: (c) => <StatusBadge status={c.row.original.status} /> },
    { id: 'queue', header: 'Queue', cell: (c) => c.row.original.queue, meta: { optional: true } },
    { id: 'key', header: 'Concurrency key', cell: (c) => (c.row.original.concurrencyKey == null ? <span className="muted">—</span> : <span className="mono clip">{c.row.original.concurrencyKey}</span>), meta: { optional: true } },
    { id: 'flow', header: 'Flow', cell: (c) => flowCell(c.row.original), meta: { optional: true } },
    { id: 'attempts', header: 'Attempts', cell: (c) => `${c.row.original.attempts}/${c.row.original.maxAttempts}`, meta: { optional: true } },
    { id: 'updated', header: 'Updated', cell: (c) => <Time at={c.row.original.updatedAt} />, meta: { optional: true } },
    { id: 'error', header: 'Last error', cell: (c) => <span className="clip">{errorText(c.row.original)}</span>, meta: { optional: true } },
    ...(canOperate
      ? [
          {
            id: 'act',
            header: 'Actions',
            cell: (c: { row: { original: Job } }) => {
              const j = c.row.original;
              if (j.status === 'failed' || j.status === 'cancelled')
                return (
                  <div className="row">
                    <ActionButton label="Retry" run={async () => { const r = await retryJob(j.id); onChanged(); return r.status; }} />
                    {rowAction?.(j)}
                  </div>
                );
              if (isUnfinished(j.status))
                return <ActionButton label="Cancel" danger confirm={`Cancel job ${j.id} (${j.type})?`} run={async () => { const r = await cancelJob(j.id); onChanged(); return r.status; }} />;
              return null;
            },
          } as Column<Job>,
        ]
      : []),
  ];
  const ids = [...selected].filter((id) => jobs.some((j) => j.id === id));
  return (
    <>
      {canOperate && (
        <div className="row" role="group" aria-label="Bulk actions">
          <span className="muted">{ids.length} selected</span>
          <button type="button" onClick={() => setSelected(ids.length === jobs.length ? new Set() : new Set(jobs.map((j) => j.id)))}>
            {ids.length === jobs.length && jobs.length > 0 ? 'Select none' : 'Select page'}
          </button>
          <ActionButton label="Cancel selected" danger disabled={ids.length === 0} confirm={`Cancel ${ids.length} selected jobs?`} run={async () => { try { return await bulk(ids, cancelJob, 'Cancelled'); } finally { setSelected(new Set()); onChanged(); } }} />
          <ActionButton label="Retry selected" disabled={ids.length === 0} confirm={`Retry ${ids.length} selected jobs?`} run={async () => { try { return await bulk(ids, (id) => retryJob(id), 'Retried'); } finally { setSelected(new Set()); onChanged(); } }} />
        </div>
      )}
      <DataTable caption={caption} columns={columns} data={jobs} rowId={(j) => j.id} empty="No job matches." />
    </>
  );
}
