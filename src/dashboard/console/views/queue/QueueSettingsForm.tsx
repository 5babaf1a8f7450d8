import { useState } from 'react';
import { ApiError } from '../../api/client';
import type { QueueSettings } from '../../api/queues';
import type { Queue } from '../../api/types';
import { describeError } from '../../components/ActionButton';

type Draft = Record<'maxConcurrency' | 'rateMax' | 'rateDurationMs' | 'maxAttempts' | 'timeoutMs' | 'backoffType' | 'backoffDelayMs' | 'backoffMaxDelayMs' | 'jitter', string> & { external: boolean };

function draftOf(q: Queue): Draft {
  return {
    maxConcurrency: q.maxConcurrency === null ? '' : String(q.maxConcurrency),
    rateMax: q.rateLimit ? String(q.rateLimit.max) : '',
    rateDurationMs: q.rateLimit ? String(q.rateLimit.durationMs) : '',
    maxAttempts: String(q.defaults.maxAttempts),
    timeoutMs: String(q.defaults.timeoutMs),
    backoffType: q.defaults.backoff.type,
    backoffDelayMs: String(q.defaults.backoff.delayMs),
    backoffMaxDelayMs: String(q.defaults.backoff.maxDelayMs),
    jitter: q.defaults.backoff.jitter,
    external: q.external,
  };
}

const int = (s: string) => (/^-?\d+$/.test(s.trim()) ? Number(s) : NaN);

/**
 * Checks a draft the way the server will (API.md "Queues") and builds the `PUT` body.
 * @returns the body, or field errors keyed like the server's `details[].path`.
 */
export function toSettings(d: Draft): { body: QueueSettings } | { errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const need = (path: string, s: string, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const n = int(s);
    if (Number.isNaN(n) || n < min || n > max) errors[path] = `must be an integer ${min}..${max === Number.MAX_SAFE_INTEGER ? '' : max}`.replace(/\.\.$/, ' or more');
    return n;
  };
  const maxConcurrency = d.maxConcurrency.trim() === '' ? null : need('maxConcurrency', d.maxConcurrency, 1);
  let rateLimit: QueueSettings['rateLimit'] = null;
  if (d.rateMax.trim() !== '' || d.rateDurationMs.trim() !== '') rateLimit = { max: need('rateLimit.max', d.rateMax, 1), durationMs: need('rateLimit.durationMs', d.rateDurationMs, 1) };
  const maxAttempts = need('defaults.maxAttempts', d.maxAttempts, 1, 100);
  const timeoutMs = need('defaults.timeoutMs', d.timeoutMs, 1, 86_400_000);
  const delayMs = need('defaults.backoff.delayMs', d.backoffDelayMs, 0);
  const maxDelayMs = need('defaults.backoff.maxDelayMs', d.backoffMaxDelayMs, 0);
  if (!errors['defaults.backoff.maxDelayMs'] && !errors['defaults.backoff.delayMs'] && maxDelayMs < delayMs) errors['defaults.backoff.maxDelayMs'] = 'must be at least the delay';
  if (Object.keys(errors).length) return { errors };
  return {
    body: {
      maxConcurrency,
      rateLimit,
      defaults: { maxAttempts, timeoutMs, backoff: { type: d.backoffType as 'fixed', delayMs, maxDelayMs, jitter: d.jitter as 'none' } },
      external: d.external,
    },
  };
}

/** The queue's settings, editable (operators): checked here, then by the server; a 400's `details` land on their fields. */
export function QueueSettingsForm({ queue, canEdit, save }: { queue: Queue; canEdit: boolean; save: (s: QueueSettings) => Promise<Queue> }) {
  const [d, setD] = useState<Draft>(() => draftOf(queue));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const field = (key: keyof Draft, path: string, label: string, hint?: string) => (
    <div className="field">
      <label htmlFor={`f-${key}`}>{label}</label>
      <input id={`f-${key}`} inputMode="numeric" value={String(d[key])} disabled={!canEdit} aria-invalid={errors[path] ? true : undefined} aria-describedby={`e-${key}`} onChange={(e) => setD({ ...d, [key]: e.target.value })} placeholder={hint} />
      <span id={`e-${key}`} className="err">
        {errors[path]}
      </span>
    </div>
  );
  return (
    <form
      aria-label="Queue settings"
      className="settings"
      onSubmit={(e) => {
        e.preventDefault();
        const r = toSettings(d);
        setOutcome(null);
        if ('errors' in r) return setErrors(r.errors);
        setErrors({});
        setBusy(true);
        save(r.body)
          .then((q) => {
            setD(draftOf(q));
            setOutcome({ ok: true, text: 'Saved.' });
          })
          .catch((err: unknown) => {
            if (err instanceof ApiError && err.details.length) setErrors(err.fieldErrors());
            setOutcome({ ok: false, text: describeError(err) });
          })
          .finally(() => setBusy(false));
      }}
    >
      {field('maxConcurrency', 'maxConcurrency', 'Max concurrency', 'no limit')}
      {field('rateMax', 'rateLimit.max', 'Rate limit: starts', 'no limit')}
      {field('rateDurationMs', 'rateLimit.durationMs', 'Rate limit: per (ms)', 'no limit')}
      {field('maxAttempts', 'defaults.maxAttempts', 'Default max attempts')}
      {field('timeoutMs', 'defaults.timeoutMs', 'Default timeout (ms)')}
      <div className="field">
        <label htmlFor="f-backoffType">Backoff</label>
        <select id="f-backoffType" value={d.backoffType} disabled={!canEdit} onChange={(e) => setD({ ...d, backoffType: e.target.value })}>
          <option>fixed</option>
          <option>linear</option>
          <option>exponential</option>
        </select>
      </div>
      {field('backoffDelayMs', 'defaults.backoff.delayMs', 'Backoff delay (ms)')}
      {field('backoffMaxDelayMs', 'defaults.backoff.maxDelayMs', 'Backoff max delay (ms)')}
      <div className="field">
        <label htmlFor="f-jitter">Jitter</label>
        <select id="f-jitter" value={d.jitter} disabled={!canEdit} onChange={(e) => setD({ ...d, jitter: e.target.value })}>
          <option>none</option>
          <option>full</option>
          <option>equal</option>
        </select>
      </div>
      <div className="field check">
        <input id="f-external" type="checkbox" checked={d.external} disabled={!canEdit} onChange={(e) => setD({ ...d, external: e.target.checked })} />
        <label htmlFor="f-external">External (served only by external workers)</label>
      </div>
      {canEdit && (
        <div className="row">
          <button type="submit" disabled={busy}>
            {busy ? 'Saving…' : 'Save settings'}
          </button>
          <span role="status" className={outcome ? (outcome.ok ? 'ok' : 'err') : undefined}>
            {outcome?.text}
          </span>
        </div>
      )}
    </form>
  );
}
