import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { isUnfinished, type JobEvent } from '../../api/types';
import { ActionButton } from '../../components/ActionButton';
import { duration, QueryState, Section, StatusBadge, Time } from '../../components/bits';
import { DataTable, type Column } from '../../components/DataTable';
import { JsonBlock, JsonEditor } from '../../components/Json';
import { useJobStream } from '../../hooks/job-stream';
import { JobFlow } from './JobFlow';
import { useJob, useJobActions, useJobHistory } from '../../hooks/jobs';
import { usePermissions } from '../../hooks/session';
import type { Execution } from '../../api/types';

const text = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v));

const execColumns: Column<Execution>[] = [
  { id: 'attempt', header: 'Attempt', cell: (c) => c.row.original.attempt },
  { id: 'outcome', header: 'Outcome', cell: (c) => <StatusBadge status={c.row.original.outcome} /> },
  { id: 'worker', header: 'Worker', cell: (c) => c.row.original.workerId ?? '—', meta: { optional: true } },
  { id: 'started', header: 'Started', cell: (c) => <Time at={c.row.original.startedAt} /> },
  { id: 'duration', header: 'Duration', cell: (c) => duration(c.row.original.durationMs) },
  { id: 'error', header: 'Error', cell: (c) => <span className="clip">{text(c.row.original.error)}</span>, meta: { optional: true } },
];

/** The timeline: every transition of `GET /jobs/:id/events`, oldest first, as text. */
export function Timeline({ events }: { events: JobEvent[] }) {
  return (
    <ol className="timeline" aria-label="Timeline">
      {events.map((e) => (
        <li key={e.seq} data-seq={e.seq} data-event={e.event}>
          <span className="t-event">{e.event}</span>
          {e.from || e.to ? (
            <span className="muted">
              {' '}
              {e.from ?? '∅'} → {e.to ?? '∅'}
            </span>
          ) : null}
          {e.attempt !== null && <span className="muted"> · attempt {e.attempt}</span>}
          {e.workerId && <span className="muted"> · {e.workerId}</span>}
          {e.reason && <span> · {e.reason}</span>}
          <span className="muted">
            {' '}
            · <Time at={e.at} />
          </span>
          {e.error ? <pre className="err">{text(e.error)}</pre> : null}
        </li>
      ))}
    </ol>
  );
}


/** `/ui/jobs/:id`: status, attempts, times, worker; a flow job's dependencies, dependents and flow; timeline, executions, logs, payload, result, progress, last error; actions by role. */
export function JobView() {
  const { id = '' } = useParams();
  const [streamed, setStreamed] = useState(false);
  const job = useJob(id, streamed);
  const j = job.data;
  const live = j !== undefined && isUnfinished(j.status);
  const stream = useJobStream(id, live);
  if (stream !== streamed) setStreamed(stream);
  const history = useJobHistory(id, live, stream);
  const actions = useJobActions();
  const { canOperate, canEnqueue } = usePermissions();
  const navigate = useNavigate();
  const [editing, setEditing] = useState<null | 'retry' | 'clone'>(null);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  if (!j) return <QueryState q={job} what={`job ${id}`} />;
  const err = j.lastError;
  const retryable = j.status === 'failed' || j.status === 'cancelled';
  const cancellable = isUnfinished(j.status);
  return (
    <>
      <h1>
        Job <span className="mono">{j.id}</span>
      </h1>
      <Section
        title="Status"
        actions={
          <div className="row">
            {canOperate && cancellable && <ActionButton label="Cancel job" danger confirm={`Cancel job ${j.id} (${j.type})? An active job is asked to stop.`} run={async () => `now ${(await actions.cancel.mutateAsync(j.id)).status}`} />}
            {canOperate && retryable && <ActionButton label="Retry" run={async () => `now ${(await actions.retry.mutateAsync({ id: j.id })).status}`} />}
            {canOperate && retryable && (
              <button type="button" onClick={() => setEditing('retry')}>
                Retry with edited payload
              </button>
            )}
            {canEnqueue && (
              <button type="button" onClick={() => setEditing('clone')}>
                Clone as new job
              </button>
            )}
          </div>
        }
      >
        <dl className="facts">
          <div><dt>Status</dt>
          <dd>
            <StatusBadge status={j.status} />
          </dd></div>
          <div><dt>Queue</dt>
          <dd>
            <Link to={`/queues/${encodeURIComponent(j.queue)}`}>{j.queue}</Link>
          </dd></div>
          <div><dt>Type</dt>
          <dd>{j.type}</dd></div>
          <div><dt>Attempts</dt>
          <dd>
            {j.attempts} of {j.maxAttempts}
          </dd></div>
          <div><dt>Priority</dt>
          <dd>{j.priority}</dd></div>
          <div><dt>Concurrency key</dt>
          <dd>{j.concurrencyKey == null ? '—' : <span className="mono">{j.concurrencyKey}</span>}</dd></div>
          <div><dt>Worker</dt>
          <dd>{j.workerId ?? '—'}</dd></div>
          <div><dt>Created</dt>
          <dd>
            <Time at={j.createdAt} />
          </dd></div>
          <div><dt>Run at</dt>
          <dd>
            <Time at={j.runAt} />
          </dd></div>
          <div><dt>Started</dt>
          <dd>
            <Time at={j.startedAt} />
          </dd></div>
          <div><dt>Finished</dt>
          <dd>
            <Time at={j.finishedAt} />
          </dd></div>
          <div><dt>Progress</dt>
          <dd>{typeof j.progress === 'number' ? <progress max={100} value={j.progress} aria-label="Progress">{j.progress}%</progress> : <span>{j.progress === null || j.progress === undefined ? '—' : text(j.progress)}</span>}</dd></div>
        </dl>
        {outcome && (
          <p role="status" className={outcome.ok ? 'ok' : 'err'}>
            {outcome.text}
          </p>
        )}
        {editing && (
          <JsonEditor
            initial={j.payload}
            label={editing === 'retry' ? 'Payload for the retry' : 'Payload of the new job'}
            submitLabel={editing === 'retry' ? 'Retry with this payload' : 'Enqueue the copy'}
            onCancel={() => setEditing(null)}
            onSubmit={(payload) => {
              const p = editing === 'retry' ? actions.retry.mutateAsync({ id: j.id, payload }) : actions.clone.mutateAsync({ job: j, payload });
              p.then(
                (n) => {
                  setEditing(null);
                  setOutcome({ ok: true, text: editing === 'retry' ? `Retried: now ${n.status}` : `Enqueued ${n.id}` });
                  if (editing === 'clone') navigate(`/jobs/${n.id}`);
                },
                (e: Error & { status?: number; code?: string }) => setOutcome({ ok: false, text: `${e.status ?? ''} ${e.code ?? ''}: ${e.message}` }),
              );
            }}
          />
        )}
      </Section>
      {err && (
        <Section title="Last error">
          <pre className="err">{err}</pre>
        </Section>
      )}
      <JobFlow job={j} />
      <Section title="Timeline">
        <QueryState q={history.events} what="the timeline" />
        {history.events.data && <Timeline events={history.events.data.items} />}
      </Section>
      <Section title="Executions">
        <QueryState q={history.executions} what="executions" />
        {history.executions.data && <DataTable caption="Executions" columns={execColumns} data={history.executions.data.items} rowId={(e) => String(e.executionSeq)} empty="Not started yet." />}
      </Section>
      <Section title={live ? 'Logs (live)' : 'Logs'}>
        <QueryState q={history.logs} what="logs" />
        {history.logs.data && (history.logs.data.items.length === 0 ? <p className="muted">No log lines.</p> : (
          <pre className="logs" aria-label="Log lines" tabIndex={0}>
            {history.logs.data.items.map((l) => `${l.at} #${l.attempt} ${l.level.toUpperCase()} ${l.message}`).join('\n')}
          </pre>
        ))}
      </Section>
      <Section title="Payload">
        <JsonBlock value={j.payload} label="Payload" />
      </Section>
      <Section title="Result">
        <JsonBlock value={j.result} label="Result" />
      </Section>
    </>
  );
}
