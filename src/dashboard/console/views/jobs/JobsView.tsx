import { useState } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import type { JobFilter } from '../../api/jobs';
import { JOB_STATUSES, type JobStatus } from '../../api/types';
import { QueryState, Section } from '../../components/bits';
import { JobsTable } from '../../components/JobsTable';
import { Pager, useCursorStack } from '../../components/Pager';
import { useJobsPage } from '../../hooks/jobs';
import { usePermissions } from '../../hooks/session';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** How far back a payload search looks when no From is given, ms (the server wants a From, ≤ 31 days). */
const PAYLOAD_DEFAULT_SPAN_MS = 7 * 86_400_000;

/** An ISO time as a `datetime-local` value (local time, minutes). */
function toLocalInput(iso: string | undefined): string {
  const t = iso ? Date.parse(iso) : NaN;
  if (Number.isNaN(t)) return '';
  const d = new Date(t - new Date(t).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/**
 * The URL query of the filter form's values; an error text instead when the
 * payload is not a JSON object, a time is not one or the flow id is not a UUID.
 * A payload search without From gets From = 7 days ago.
 */
export function filterQuery(f: FormData, now = Date.now()): URLSearchParams | string {
  const next = new URLSearchParams();
  for (const k of ['queue', 'status', 'type']) {
    const v = String(f.get(k) ?? '').trim();
    if (v) next.set(k, v);
  }
  for (const k of ['from', 'to']) {
    const v = String(f.get(k) ?? '').trim();
    if (!v) continue;
    const t = Date.parse(v);
    if (Number.isNaN(t)) return `${k === 'from' ? 'From' : 'To'} is not a time`;
    next.set(k, new Date(t).toISOString());
  }
  const flowId = String(f.get('flowId') ?? '').trim();
  if (flowId) {
    if (!UUID.test(flowId)) return 'Flow id is a UUID, e.g. 0190f5a0-0000-7000-8000-000000000001';
    next.set('flowId', flowId.toLowerCase());
  }
  const payload = String(f.get('payload') ?? '').trim();
  if (payload) {
    let v: unknown;
    try {
      v = JSON.parse(payload);
    } catch {
      return 'Payload must be JSON, e.g. {"orderId": 42}';
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'Payload must be a JSON object, e.g. {"orderId": 42}';
    next.set('payload', JSON.stringify(v));
    if (!next.has('from')) next.set('from', new Date(now - PAYLOAD_DEFAULT_SPAN_MS).toISOString());
  }
  return next;
}

/** A filtered, keyset-paged list of jobs (also the tabs of the queue view). */
export function JobsList({ filter, caption }: { filter: JobFilter; caption: string }) {
  const pages = useCursorStack();
  const q = useJobsPage(filter, pages.cursor);
  const { canOperate } = usePermissions();
  return (
    <>
      <div className="row">
        <button type="button" onClick={() => void q.refetch()} disabled={q.isFetching}>
          {q.isFetching ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      <QueryState q={q} what="jobs" />
      {q.data && <JobsTable caption={caption} jobs={q.data.items} canOperate={canOperate} onChanged={() => void q.refetch()} />}
      <Pager page={pages.page} nextCursor={q.data?.nextCursor} onNext={pages.next} onPrev={pages.prev} busy={q.isFetching} />
    </>
  );
}

/** The explorer's filter from its URL query (an unknown status is no filter). */
export function filterOf(params: URLSearchParams): JobFilter {
  return {
    queue: params.get('queue') || undefined,
    status: (JOB_STATUSES as string[]).includes(params.get('status') ?? '') ? (params.get('status') as JobStatus) : undefined,
    type: params.get('type') || undefined,
    from: params.get('from') || undefined,
    to: params.get('to') || undefined,
    payload: params.get('payload') || undefined,
    flowId: params.get('flowId') || undefined,
  };
}

/** `/ui/jobs?queue=&status=&type=&flowId=&from=&to=&payload=`: filters live in the URL; jump to a job by id. */
export function JobsView() {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const filter = filterOf(params);
  const [formError, setFormError] = useState<string | null>(null);
  const [jump, setJump] = useState('');
  const [jumpError, setJumpError] = useState<string | null>(null);
  return (
    <>
      <h1>Jobs</h1>
      <Section title="Filter">
        <form
          className="filters"
          aria-label="Filter jobs"
          onSubmit={(e) => {
            e.preventDefault();
            const next = filterQuery(new FormData(e.currentTarget));
            if (typeof next === 'string') return setFormError(next);
            setFormError(null);
            setParams(next);
          }}
        >
          <label>
            Queue <input name="queue" defaultValue={filter.queue ?? ''} key={`q${filter.queue}`} />
          </label>
          <label>
            Status{' '}
            <select name="status" defaultValue={filter.status ?? ''} key={`s${filter.status}`}>
              <option value="">any</option>
              {JOB_STATUSES.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          </label>
          <label>
            Type <input name="type" defaultValue={filter.type ?? ''} key={`t${filter.type}`} />
          </label>
          <label>
            Flow id <input name="flowId" className="mono" defaultValue={filter.flowId ?? ''} key={`w${filter.flowId}`} aria-invalid={formError?.startsWith('Flow') ?? false} aria-describedby="filter-err" />
          </label>
          <label>
            From <input name="from" type="datetime-local" defaultValue={toLocalInput(filter.from)} key={`f${filter.from}`} />
          </label>
          <label>
            To <input name="to" type="datetime-local" defaultValue={toLocalInput(filter.to)} key={`o${filter.to}`} />
          </label>
          <label>
            Payload contains <input name="payload" className="mono" placeholder='{"orderId": 42}' defaultValue={filter.payload ?? ''} key={`p${filter.payload}`} aria-invalid={formError !== null} aria-describedby="filter-err" />
          </label>
          <button type="submit">Apply</button>
          <span id="filter-err" className="err" role={formError ? 'alert' : undefined}>
            {formError}
          </span>
        </form>
        <form
          className="filters"
          aria-label="Jump to a job"
          onSubmit={(e) => {
            e.preventDefault();
            const id = jump.trim();
            if (!UUID.test(id)) return setJumpError('A job id is a UUID, e.g. 0190f5a0-0000-7000-8000-000000000001');
            setJumpError(null);
            navigate(`/jobs/${id}`);
          }}
        >
          <label>
            Job id <input value={jump} onChange={(e) => setJump(e.target.value)} aria-invalid={jumpError !== null} aria-describedby="jump-err" />
          </label>
          <button type="submit">Go</button>
          <span id="jump-err" className="err" role={jumpError ? 'alert' : undefined}>
            {jumpError}
          </span>
        </form>
      </Section>
      <Section title="Results">
        <JobsList key={params.toString()} filter={filter} caption="Jobs" />
      </Section>
    </>
  );
}
