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

/** `/ui/jobs?queue=&status=&type=`: filters live in the URL; jump to a job by id. */
export function JobsView() {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const filter: JobFilter = {
    queue: params.get('queue') || undefined,
    status: (JOB_STATUSES as string[]).includes(params.get('status') ?? '') ? (params.get('status') as JobStatus) : undefined,
    type: params.get('type') || undefined,
  };
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
            const f = new FormData(e.currentTarget);
            const next = new URLSearchParams();
            for (const k of ['queue', 'status', 'type']) {
              const v = String(f.get(k) ?? '').trim();
              if (v) next.set(k, v);
            }
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
          <button type="submit">Apply</button>
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
