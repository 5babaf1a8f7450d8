import { useState } from 'react';
import type { Schedule } from '../../api/types';
import { ActionButton } from '../../components/ActionButton';
import { QueryState, Section, Time } from '../../components/bits';
import { DataTable, type Column } from '../../components/DataTable';
import { useScheduleActions, useSchedules } from '../../hooks/schedules';
import { usePermissions } from '../../hooks/session';
import { RunNowButton } from './RunNowButton';
import { cronInWords, ScheduleForm } from './ScheduleForm';

/**
 * `/ui/schedules`: every schedule with its cron in words, time zone and next run;
 * operators create, edit, enable/disable, delete and run now (also a disabled
 * schedule: its job is enqueued at once, the next run does not move).
 */
export function SchedulesView() {
  const q = useSchedules();
  const act = useScheduleActions();
  const { canOperate } = usePermissions();
  const [editing, setEditing] = useState<Schedule | 'new' | null>(null);
  const columns: Column<Schedule>[] = [
    { id: 'name', header: 'Name', cell: (c) => c.row.original.name },
    {
      id: 'cron',
      header: 'When',
      cell: (c) => {
        const w = cronInWords(c.row.original.cron);
        return (
          <>
            <span>{'text' in w ? w.text : c.row.original.cron}</span>
            <br />
            <code className="muted">{c.row.original.cron}</code> <span className="muted">({c.row.original.timezone})</span>
          </>
        );
      },
    },
    { id: 'target', header: 'Job', cell: (c) => `${c.row.original.type} → ${c.row.original.queue}`, meta: { optional: true } },
    { id: 'next', header: 'Next run', cell: (c) => (c.row.original.enabled ? <Time at={c.row.original.nextRunAt} /> : <span className="badge s-paused">disabled</span>) },
    { id: 'last', header: 'Last run', cell: (c) => <Time at={c.row.original.lastRunAt} />, meta: { optional: true } },
    ...(canOperate
      ? [
          {
            id: 'act',
            header: 'Actions',
            cell: (c: { row: { original: Schedule } }) => {
              const s = c.row.original;
              return (
                <div className="row">
                  <RunNowButton
                    onRun={() => act.run.mutate(s.id)}
                    busy={act.run.isPending && act.run.variables === s.id}
                    job={act.run.variables === s.id ? act.run.data : undefined}
                    error={act.run.variables === s.id ? act.run.error : undefined}
                  />
                  <ActionButton label={s.enabled ? 'Disable' : 'Enable'} run={async () => ((await act.update.mutateAsync({ id: s.id, body: { enabled: !s.enabled } })).enabled ? 'enabled' : 'disabled')} />
                  <button type="button" onClick={() => setEditing(s)}>
                    Edit
                  </button>
                  <ActionButton label="Delete" danger confirm={`Delete schedule ${s.name}? Jobs it already enqueued stay.`} run={async () => (await act.remove.mutateAsync(s.id), 'deleted')} />
                </div>
              );
            },
          } as Column<Schedule>,
        ]
      : []),
  ];
  return (
    <>
      <h1>Schedules</h1>
      <Section
        title="Cron schedules"
        actions={
          canOperate && editing === null ? (
            <button type="button" onClick={() => setEditing('new')}>
              New schedule
            </button>
          ) : null
        }
      >
        {editing !== null && (
          <ScheduleForm
            key={editing === 'new' ? 'new' : editing.id}
            initial={editing === 'new' ? undefined : editing}
            submit={(b) => (editing === 'new' ? act.create.mutateAsync(b) : act.update.mutateAsync({ id: editing.id, body: b }))}
            onDone={() => setEditing(null)}
          />
        )}
        <QueryState q={q} what="schedules" />
        {q.data && <DataTable caption="Schedules" columns={columns} data={q.data} rowId={(s) => s.id} empty="No schedule yet." />}
      </Section>
    </>
  );
}
