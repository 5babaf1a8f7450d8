import { useState } from 'react';
import { useParams } from 'react-router';
import { JOB_STATUSES, type JobStatus } from '../../api/types';
import { ActionButton } from '../../components/ActionButton';
import { QueryState, Section, StatusBadge } from '../../components/bits';
import { useQueue, useQueueActions } from '../../hooks/queues';
import { usePermissions } from '../../hooks/session';
import { JobsList } from '../jobs/JobsView';
import { KeysPanel } from './KeysPanel';
import { QueueSettingsForm } from './QueueSettingsForm';

/** `/ui/queues/:name`: counts, pause/resume (confirmed), the busiest concurrency keys and their overrides, settings, jobs by status in tabs. */
export function QueueView() {
  const { name = '' } = useParams();
  const q = useQueue(name);
  const { canOperate } = usePermissions();
  const act = useQueueActions(name);
  const [tab, setTab] = useState<JobStatus>('waiting');
  if (!q.data) return <QueryState q={q} what={`queue ${name}`} />;
  const queue = q.data;
  // The counts of API.md (six statuses): `blocked` is not counted by the server (yet): its tab lists the jobs without a number.
  const counts: Partial<Record<JobStatus, number>> = queue.counts;
  return (
    <>
      <h1>
        Queue {queue.name} {queue.paused && <span className="badge s-paused">paused</span>}
      </h1>
      <Section
        title="State"
        actions={
          canOperate ? (
            queue.paused ? (
              <ActionButton label="Resume queue" confirm={`Resume queue ${queue.name}? Its waiting jobs start running.`} run={async () => ((await act.resume.mutateAsync()).paused ? 'still paused' : 'resumed')} />
            ) : (
              <ActionButton label="Pause queue" danger confirm={`Pause queue ${queue.name}? No job of it starts until resumed (active ones finish).`} run={async () => ((await act.pause.mutateAsync()).paused ? 'paused' : 'not paused')} />
            )
          ) : null
        }
      >
        <dl className="facts">
          {JOB_STATUSES.filter((s) => counts[s] !== undefined).map((s) => (
            <div key={s}>
              <dt>{s}</dt>
              <dd>{counts[s]}</dd>
            </div>
          ))}
        </dl>
      </Section>
      <Section title="Busiest keys">
        <KeysPanel queue={queue} canEdit={canOperate} />
      </Section>
      <Section title="Settings">
        <QueueSettingsForm key={queue.name} queue={queue} canEdit={canOperate} save={(s) => act.configure.mutateAsync(s)} />
      </Section>
      <Section title="Jobs">
        <div role="tablist" aria-label="Jobs by status" className="tabs">
          {JOB_STATUSES.map((s) => (
            <button key={s} role="tab" type="button" id={`tab-${s}`} aria-selected={tab === s} aria-controls="tabpanel" tabIndex={tab === s ? 0 : -1} onClick={() => setTab(s)}
              onKeyDown={(e) => {
                const i = JOB_STATUSES.indexOf(tab);
                if (e.key === 'ArrowRight') setTab(JOB_STATUSES[(i + 1) % JOB_STATUSES.length]);
                if (e.key === 'ArrowLeft') setTab(JOB_STATUSES[(i + JOB_STATUSES.length - 1) % JOB_STATUSES.length]);
              }}>
              <StatusBadge status={s} /> {counts[s]}
            </button>
          ))}
        </div>
        <div role="tabpanel" id="tabpanel" aria-labelledby={`tab-${tab}`}>
          <JobsList key={tab} filter={{ queue: queue.name, status: tab }} caption={`${tab} jobs of ${queue.name}`} />
        </div>
      </Section>
    </>
  );
}
