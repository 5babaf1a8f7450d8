import cronstrue from 'cronstrue';
import { useEffect, useState } from 'react';
import { ApiError } from '../../api/client';
import type { ScheduleBody } from '../../api/schedules';
import type { Schedule } from '../../api/types';
import { describeError } from '../../components/ActionButton';
import { parseJsonObject } from '../../components/Json';
import { useSchedulePreview } from '../../hooks/schedules';

/** A cron expression in words ("At 02:00 AM, only on Monday"), or why it cannot be read. */
export function cronInWords(cron: string): { text: string } | { error: string } {
  try {
    return { text: cronstrue.toString(cron, { use24HourTimeFormat: true, verbose: false }) };
  } catch (e) {
    return { error: String((e as Error)?.message ?? e) };
  }
}

/** The value after a pause in typing (ms), so the preview asks the server once per pause, not per key. */
function useDebounced<T>(v: T, ms: number): T {
  const [d, setD] = useState(v);
  useEffect(() => {
    const t = setTimeout(() => setD(v), ms);
    return () => clearTimeout(t);
  }, [v, ms]);
  return d;
}

/**
 * Create or edit a schedule: the cron in words as it is typed, the next runs
 * from `GET /schedules/preview` (the scheduler's own rules and time zones),
 * and the server's 400 `details` on their fields.
 */
export function ScheduleForm({ initial, submit, onDone }: { initial?: Schedule; submit: (b: ScheduleBody) => Promise<Schedule>; onDone: () => void }) {
  const [f, setF] = useState({
    name: initial?.name ?? '',
    cron: initial?.cron ?? '*/5 * * * *',
    timezone: initial?.timezone ?? 'UTC',
    queue: initial?.queue ?? 'default',
    type: initial?.type ?? '',
    payload: JSON.stringify(initial?.payload ?? {}, null, 2),
  });
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [outcome, setOutcome] = useState<string | null>(null);
  const cron = useDebounced(f.cron, 300);
  const tz = useDebounced(f.timezone, 300);
  const words = cronInWords(f.cron);
  const preview = useSchedulePreview(cron, tz);
  const payload = parseJsonObject(f.payload);
  const set = (k: keyof typeof f) => (e: React.ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) => setF({ ...f, [k]: e.target.value });
  const input = (k: keyof typeof f, label: string) => (
    <div className="field">
      <label htmlFor={`s-${k}`}>{label}</label>
      <input id={`s-${k}`} value={f[k]} onChange={set(k)} aria-invalid={errors[k] ? true : undefined} aria-describedby={`se-${k}`} />
      <span id={`se-${k}`} className="err">
        {errors[k]}
      </span>
    </div>
  );
  return (
    <form
      aria-label={initial ? `Edit schedule ${initial.name}` : 'New schedule'}
      className="settings"
      onSubmit={(e) => {
        e.preventDefault();
        if ('error' in payload) return setErrors({ payload: payload.error });
        const body: ScheduleBody = { cron: f.cron, timezone: f.timezone, queue: f.queue, type: f.type, payload: payload.value };
        if (!initial) body.name = f.name;
        setOutcome(null);
        submit(body).then(
          () => onDone(),
          (err: unknown) => {
            setErrors(err instanceof ApiError ? err.fieldErrors() : {});
            setOutcome(describeError(err));
          },
        );
      }}
    >
      {!initial && input('name', 'Name')}
      {input('cron', 'Cron (5 or 6 fields)')}
      <p className={'error' in words ? 'err' : 'muted'} aria-live="polite">
        {'error' in words ? words.error : words.text}
      </p>
      {input('timezone', 'Time zone (IANA)')}
      <div aria-live="polite">
        {preview.error ? (
          <p className="err">{describeError(preview.error)}</p>
        ) : preview.data ? (
          <p className="muted">Next runs: {preview.data.runs.join(' · ')}</p>
        ) : null}
      </div>
      {input('queue', 'Queue')}
      {input('type', 'Job type')}
      <div className="field">
        <label htmlFor="s-payload">Payload (JSON object)</label>
        <textarea id="s-payload" rows={4} value={f.payload} onChange={set('payload')} aria-invalid={'error' in payload} aria-describedby="se-payload" spellCheck={false} />
        <span id="se-payload" className="err">
          {'error' in payload ? payload.error : errors.payload}
        </span>
      </div>
      <div className="row">
        <button type="submit">{initial ? 'Save schedule' : 'Create schedule'}</button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
        <span role="status" className="err">
          {outcome}
        </span>
      </div>
    </form>
  );
}
