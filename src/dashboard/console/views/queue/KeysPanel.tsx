import { useEffect, useRef, useState } from 'react';
import { ApiError } from '../../api/client';
import type { Queue, QueueKey } from '../../api/types';
import { ActionButton, describeError, type Outcome } from '../../components/ActionButton';
import { QueryState } from '../../components/bits';
import { DataTable, type Column } from '../../components/DataTable';
import { useKeyOverrideActions, useQueueKeys } from '../../hooks/queues';
import { concurrencyText, overrideDraft, rateText, toOverride, type OverrideDraft } from './limits';

/** How many keys the panel asks for first, and the longer lists "Show more keys" steps through (the server's limit is 1..1000). */
const LIMITS = [20, 100, 1000];

/** Which parts of a key's limits are its own: "concurrency, rate limit". */
function overridden(k: QueueKey): string {
  const o = k.overrides;
  if (!o) return '';
  return [o.concurrency != null && 'concurrency', o.rateLimit && 'rate limit'].filter(Boolean).join(', ') || 'empty';
}

/**
 * Sets or edits one key's override (operator): concurrency, rate limit max and
 * window, checked here ({@link toOverride}), then by the server, whose 400
 * message and field details are shown. `existing` null = a key typed in (one not
 * listed, e.g. before its traffic arrives). Remove (confirmed) when it has one.
 */
function OverrideEditor({ queue, existing, onDone }: { queue: string; existing: QueueKey | null; onDone: (o: Outcome) => void }) {
  const act = useKeyOverrideActions(queue);
  const [d, setD] = useState<OverrideDraft>(() => overrideDraft(existing));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const title = existing ? `Override for key ${existing.key}` : 'Override for a key';
  const field = (k: keyof OverrideDraft, path: string, label: string, hint: string, ref?: React.Ref<HTMLInputElement>) => (
    <div className="field">
      <label htmlFor={`ko-${k}`}>{label}</label>
      <input id={`ko-${k}`} ref={ref} inputMode={k === 'key' ? undefined : 'numeric'} value={d[k]} placeholder={hint} aria-invalid={errors[path] ? true : undefined} aria-describedby={`koe-${k}`} onChange={(e) => setD({ ...d, [k]: e.target.value })} />
      <span id={`koe-${k}`} className="err">
        {errors[path]}
      </span>
    </div>
  );
  return (
    <form
      aria-label={title}
      className="settings key-editor"
      onSubmit={(e) => {
        e.preventDefault();
        const r = toOverride(d);
        setOutcome(null);
        if ('errors' in r) {
          setErrors(r.errors);
          if (r.errors['']) setOutcome({ ok: false, text: r.errors[''] });
          return;
        }
        setErrors({});
        setBusy(true);
        act.set.mutateAsync({ key: r.key, override: r.body }).then(
          (k) => onDone({ ok: true, text: `Override of key ${k.key} saved: concurrency ${concurrencyText(k.limits.concurrency)}, rate limit ${rateText(k.limits.rateLimit)}.` }),
          (err: unknown) => {
            if (err instanceof ApiError && err.details.length) setErrors(err.fieldErrors());
            setOutcome({ ok: false, text: describeError(err) });
            setBusy(false);
          },
        );
      }}
    >
      <h3>{title}</h3>
      {existing ? null : field('key', 'key', 'Key', 'e.g. customer-42', first)}
      {field('concurrency', 'concurrency', 'Concurrency of this key', "the queue's", existing ? first : undefined)}
      {field('rateMax', 'rateLimit.max', 'Rate limit of this key: starts', "the queue's")}
      {field('rateDurationMs', 'rateLimit.durationMs', 'Rate limit of this key: per (ms)', "the queue's")}
      <div className="row">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save override'}
        </button>
        <button type="button" onClick={() => onDone(null)}>
          Close
        </button>
        {existing?.overrides && (
          <ActionButton
            label="Remove override"
            danger
            confirm={`Remove the override of key ${existing.key}? The queue's per-key limits apply to it again.`}
            run={async () => {
              const k = await act.remove.mutateAsync(existing.key);
              onDone({ ok: true, text: `Override of key ${k.key} removed.` });
              return 'removed';
            }}
          />
        )}
        <span role="status" className={outcome ? (outcome.ok ? 'ok' : 'err') : undefined}>
          {outcome?.text}
        </span>
      </div>
    </form>
  );
}

/**
 * The queue's busiest concurrency keys (`GET /queues/:name/keys`): waiting,
 * active, the limits in force and whether they are the key's own override;
 * refreshed with the rest of the queue view. Operators set, edit and remove
 * overrides; a viewer sees the table only.
 */
export function KeysPanel({ queue, canEdit }: { queue: Queue; canEdit: boolean }) {
  const [limit, setLimit] = useState(LIMITS[0]);
  const q = useQueueKeys(queue.name, limit);
  // null: no editor; 'new': a key typed in; else the key being edited.
  const [editing, setEditing] = useState<string | 'new' | null>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const items = q.data?.items ?? [];
  const existing = editing && editing !== 'new' ? (items.find((k) => k.key === editing) ?? { key: editing, waiting: 0, active: 0, overrides: null, limits: { concurrency: null, rateLimit: null } }) : null;
  const columns: Column<QueueKey>[] = [
    { id: 'key', header: 'Key', cell: (c) => <span className="mono">{c.row.original.key}</span> },
    { id: 'waiting', header: 'Waiting', cell: (c) => c.row.original.waiting },
    { id: 'active', header: 'Active', cell: (c) => c.row.original.active },
    { id: 'concurrency', header: 'Concurrency limit', cell: (c) => concurrencyText(c.row.original.limits?.concurrency) },
    { id: 'rate', header: 'Rate limit', cell: (c) => rateText(c.row.original.limits?.rateLimit), meta: { optional: true } },
    {
      id: 'override',
      header: 'Override',
      cell: (c) => {
        const what = overridden(c.row.original);
        return what ? (
          <span>
            <span className="badge s-override">override</span> <span className="muted">{what}</span>
          </span>
        ) : (
          <span className="muted">—</span>
        );
      },
    },
    ...(canEdit
      ? [
          {
            id: 'act',
            header: 'Actions',
            cell: (c: { row: { original: QueueKey } }) => (
              <button type="button" aria-label={`${c.row.original.overrides ? 'Edit' : 'Set'} override of key ${c.row.original.key}`} onClick={() => (setOutcome(null), setEditing(c.row.original.key))}>
                {c.row.original.overrides ? 'Edit override' : 'Set override'}
              </button>
            ),
          } as Column<QueueKey>,
        ]
      : []),
  ];
  const perKey = `Keys without an override: concurrency ${concurrencyText(queue.keyConcurrency)}, rate limit ${rateText(queue.keyRateLimit)}${queue.fairness ? `; fairness ${queue.fairness}` : ''}.`;
  return (
    <>
      <div className="row">
        <span className="muted">{perKey}</span>
        {canEdit && editing === null && (
          <button type="button" onClick={() => (setOutcome(null), setEditing('new'))}>
            Override a key…
          </button>
        )}
        <span role="status" className={outcome ? (outcome.ok ? 'ok' : 'err') : undefined}>
          {outcome?.text}
        </span>
      </div>
      {canEdit && editing !== null && (
        <OverrideEditor
          key={editing}
          queue={queue.name}
          existing={existing}
          onDone={(o) => {
            setEditing(null);
            setOutcome(o);
          }}
        />
      )}
      <QueryState q={q} what="keys" />
      {q.data && <DataTable caption={`Busiest keys of ${queue.name}`} columns={columns} data={items} rowId={(k) => k.key} empty="No keyed job waiting or active, and no override." />}
      {q.data && items.length >= limit && limit < LIMITS[LIMITS.length - 1] && (
        <div className="row">
          <button type="button" disabled={q.isFetching} onClick={() => setLimit(LIMITS[LIMITS.indexOf(limit) + 1])}>
            Show more keys (up to {LIMITS[LIMITS.indexOf(limit) + 1]})
          </button>
        </div>
      )}
    </>
  );
}
