import { useState } from 'react';
import { Link } from 'react-router';
import type { DlqGroup, Job } from '../../api/types';
import { ActionButton } from '../../components/ActionButton';
import { QueryState, Section, Time } from '../../components/bits';
import { JobsTable } from '../../components/JobsTable';
import { JsonEditor } from '../../components/Json';
import { useJobActions } from '../../hooks/jobs';
import { Pager, useCursorStack } from '../../components/Pager';
import { useDlqActions, useDlqGroups, useDlqJobs } from '../../hooks/dlq';
import { usePermissions } from '../../hooks/session';
import { GroupSummary } from './GroupSummary';

/** What an action in a group said; shown by the view, since a retried group may leave the list. */
type Outcome = { ok: boolean; text: string };

/**
 * The failed jobs of one group (`GET /jobs/dlq/all?fingerprint=`, within the view's queue);
 * each can be retried as it is or with an edited payload.
 */
function GroupJobs({
  group,
  queue,
  report,
}: {
  group: DlqGroup;
  queue?: string;
  report: (o: Outcome) => void;
}) {
  const pages = useCursorStack();
  const q = useDlqJobs({ queue, fingerprint: group.fingerprint }, pages.cursor);
  const { canOperate } = usePermissions();
  const actions = useJobActions();
  const [editing, setEditing] = useState<Job | null>(null);
  return (
    <div className="group-jobs">
      <QueryState q={q} what="the group's jobs" />
      {q.data && (
        <JobsTable
          caption={`Jobs of group ${group.fingerprint}`}
          jobs={q.data.items}
          canOperate={canOperate}
          onChanged={() => void q.refetch()}
          rowAction={(j) => (
            <button
              type="button"
              onClick={() => setEditing(j)}
              aria-label={`Edit & retry job ${j.id}`}
            >
              Edit &amp; retry
            </button>
          )}
        />
      )}
      {editing && (
        <JsonEditor
          key={editing.id}
          initial={editing.payload}
          label={`Payload for the retry of job ${editing.id}`}
          submitLabel="Retry with this payload"
          onCancel={() => setEditing(null)}
          onSubmit={(payload) => {
            const id = editing.id;
            actions.retry.mutate(
              { id, payload },
              {
                onSuccess: (j) => {
                  setEditing(null);
                  report({
                    ok: true,
                    text: `Job ${id.slice(-12)} retried with the edited payload: now ${j.status}`,
                  });
                  void q.refetch();
                },
                onError: (e) =>
                  report({ ok: false, text: `Retry refused: ${(e as Error).message}` }),
              },
            );
          }}
        />
      )}
      <Pager
        page={pages.page}
        nextCursor={q.data?.nextCursor}
        onNext={pages.next}
        onPrev={pages.prev}
        busy={q.isFetching}
      />
    </div>
  );
}

/** `/ui/dlq`: dead letters grouped by cause (fingerprint), largest first, each with its failure summary; retry a group, summarize it again, purge (confirmed). */
export function DlqView() {
  const [queue, setQueue] = useState('');
  const groups = useDlqGroups(queue || undefined);
  const act = useDlqActions();
  const { canOperate } = usePermissions();
  const [open, setOpen] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  return (
    <>
      <h1>Dead letters</h1>
      <Section
        title="Groups by cause"
        actions={
          canOperate ? (
            <ActionButton
              label={queue ? `Purge DLQ of ${queue}` : 'Purge whole DLQ'}
              danger
              confirm={`Delete every failed job${queue ? ` of queue ${queue}` : ''}? Their audit rows stay; the jobs cannot be retried afterwards.`}
              run={async () => `purged ${(await act.purge.mutateAsync(queue || undefined)).purged}`}
            />
          ) : null
        }
      >
        <form className="filters" onSubmit={(e) => e.preventDefault()}>
          <label>
            Queue{' '}
            <input
              value={queue}
              onChange={(e) => setQueue(e.target.value.trim())}
              placeholder="all queues"
            />
          </label>
        </form>
        {outcome && (
          <p role="status" className={outcome.ok ? 'ok' : 'err'}>
            {outcome.text}
          </p>
        )}
        <QueryState q={groups} what="dead-letter groups" />
        {groups.data && groups.data.items.length === 0 && (
          <p className="ok">The dead-letter queue is empty.</p>
        )}
        <ul className="groups">
          {groups.data?.items.map((g) => (
            <li key={g.fingerprint} className="card">
              <div className="row">
                <strong>{g.count}×</strong>
                <span className="clip err" title={g.sample ?? undefined}>
                  {g.sample}
                </span>
              </div>
              <p className="muted">
                {g.types.join(', ')} in{' '}
                {g.queues.map((q, i) => (
                  <span key={q}>
                    {i > 0 && ', '}
                    <Link to={`/queues/${encodeURIComponent(q)}`}>{q}</Link>
                  </span>
                ))}{' '}
                · first <Time at={g.firstAt} /> · last <Time at={g.lastAt} />
              </p>
              <GroupSummary fingerprint={g.fingerprint} summary={g.summary} canOperate={canOperate} summarizeAgain={(fp) => act.summarize.mutateAsync(fp)} />
              <div className="row">
                <button
                  type="button"
                  aria-expanded={open === g.fingerprint}
                  onClick={() => setOpen(open === g.fingerprint ? null : g.fingerprint)}
                >
                  {open === g.fingerprint ? 'Hide jobs' : 'Show jobs'}
                </button>
                {canOperate && (
                  <ActionButton
                    label="Retry group"
                    confirm={`Retry all ${g.count} jobs failing with "${(g.sample ?? '').slice(0, 80)}"?`}
                    run={async () => {
                      const n = (await act.retryGroup.mutateAsync(g.fingerprint)).retried;
                      setOutcome({
                        ok: true,
                        text: `Retried ${n} jobs failing with "${(g.sample ?? '').slice(0, 80)}"`,
                      });
                      return `retried ${n}`;
                    }}
                  />
                )}
              </div>
              {open === g.fingerprint && (
                <GroupJobs group={g} queue={queue || undefined} report={setOutcome} />
              )}
            </li>
          ))}
        </ul>
      </Section>
    </>
  );
}
