import { useState } from 'react';
import { Link } from 'react-router';
import type { DlqGroup } from '../../api/types';
import { ActionButton } from '../../components/ActionButton';
import { QueryState, Section, Time } from '../../components/bits';
import { JobsTable } from '../../components/JobsTable';
import { Pager, useCursorStack } from '../../components/Pager';
import { useDlqActions, useDlqGroups, useDlqJobs } from '../../hooks/dlq';
import { usePermissions } from '../../hooks/session';

/** The failed jobs of one group: `GET /jobs/dlq/all` narrowed to the group's queue/type when it has only one, keeping the group's fingerprint. */
function GroupJobs({ group, queue }: { group: DlqGroup; queue?: string }) {
  const pages = useCursorStack();
  const scope = { queue: queue ?? (group.queues.length === 1 ? group.queues[0] : undefined), type: group.types.length === 1 ? group.types[0] : undefined };
  const q = useDlqJobs(scope, pages.cursor);
  const { canOperate } = usePermissions();
  const items = (q.data?.items ?? []).filter((j) => j.fingerprint === undefined || j.fingerprint === group.fingerprint);
  return (
    <div className="group-jobs">
      <QueryState q={q} what="the group's jobs" />
      {q.data && <JobsTable caption={`Jobs of group ${group.fingerprint}`} jobs={items} canOperate={canOperate} onChanged={() => void q.refetch()} />}
      <Pager page={pages.page} nextCursor={q.data?.nextCursor} onNext={pages.next} onPrev={pages.prev} busy={q.isFetching} />
    </div>
  );
}

/** `/ui/dlq`: dead letters grouped by cause (fingerprint), largest first; retry a group, purge (confirmed). */
export function DlqView() {
  const [queue, setQueue] = useState('');
  const groups = useDlqGroups(queue || undefined);
  const act = useDlqActions();
  const { canOperate } = usePermissions();
  const [open, setOpen] = useState<string | null>(null);
  return (
    <>
      <h1>Dead letters</h1>
      <Section
        title="Groups by cause"
        actions={
          canOperate ? (
            <ActionButton label={queue ? `Purge DLQ of ${queue}` : 'Purge whole DLQ'} danger confirm={`Delete every failed job${queue ? ` of queue ${queue}` : ''}? Their audit rows stay; the jobs cannot be retried afterwards.`} run={async () => `purged ${(await act.purge.mutateAsync(queue || undefined)).purged}`} />
          ) : null
        }
      >
        <form className="filters" onSubmit={(e) => e.preventDefault()}>
          <label>
            Queue <input value={queue} onChange={(e) => setQueue(e.target.value.trim())} placeholder="all queues" />
          </label>
        </form>
        <QueryState q={groups} what="dead-letter groups" />
        {groups.data && groups.data.items.length === 0 && <p className="ok">The dead-letter queue is empty.</p>}
        <ul className="groups">
          {groups.data?.items.map((g) => (
            <li key={g.fingerprint} className="card">
              <div className="row">
                <strong>{g.count}×</strong>
                <span className="clip err" title={g.sample}>
                  {g.sample}
                </span>
              </div>
              <p className="muted">
                {g.types.join(', ')} in {g.queues.map((q, i) => (
                  <span key={q}>
                    {i > 0 && ', '}
                    <Link to={`/queues/${encodeURIComponent(q)}`}>{q}</Link>
                  </span>
                ))} · first <Time at={g.firstAt} /> · last <Time at={g.lastAt} />
              </p>
              <div className="row">
                <button type="button" aria-expanded={open === g.fingerprint} onClick={() => setOpen(open === g.fingerprint ? null : g.fingerprint)}>
                  {open === g.fingerprint ? 'Hide jobs' : 'Show jobs'}
                </button>
                {canOperate && <ActionButton label="Retry group" confirm={`Retry all ${g.count} jobs failing with "${g.sample.slice(0, 80)}"?`} run={async () => `retried ${(await act.retryGroup.mutateAsync(g.fingerprint)).retried}`} />}
              </div>
              {open === g.fingerprint && <GroupJobs group={g} queue={queue || undefined} />}
            </li>
          ))}
        </ul>
      </Section>
    </>
  );
}
