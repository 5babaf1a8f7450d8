import { useState } from 'react';
import { ApiError } from '../../api/client';
import type { QueueSettings } from '../../api/queues';
import type { Queue } from '../../api/types';
import { describeError } from '../../components/ActionButton';
import { KEY_BOUNDS, optionalInt, optionalRate } from './limits';

type Draft = Record<
  'maxConcurrency' | 'rateMax' | 'rateDurationMs' | 'maxAttempts' | 'timeoutMs' | 'backoffType' | 'backoffDelayMs' | 'backoffMaxDelayMs' | 'jitter' | 'keyConcurrency' | 'keyRateMax' | 'keyRateDurationMs' | 'fairness' | 'agingMs',
  string
> & { external: boolean };

/** The fairness choices; `default` sends null (fifo, round_robin once the queue has keyed jobs). */
const FAIRNESS = ['fifo', 'round_robin', 'default'] as const;

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
    keyConcurrency: q.keyConcurrency == null ? '' : String(q.keyConcurrency),
    keyRateMax: q.keyRateLimit ? String(q.keyRateLimit.max) : '',
    keyRateDurationMs: q.keyRateLimit ? String(q.keyRateLimit.durationMs) : '',
    // GET answers the effective value; a server without issue 20 answers none.
    fairness: q.fairness ?? 'default',
    agingMs: q.agingMs == null ? '' : String(q.agingMs),
  };
}

const int = (s: string) => (/^-?\d+$/.test(s.trim()) ? Number(s) : NaN);

/**
 * Checks a draft the way the server will (API.md "Queues"; v1.1 flow control per
 * key: keyConcurrency 1..100,000, keyRateLimit max 1..10,000 per 1..86,400,000 ms,
 * agingMs 1,000..86,400,000) and builds the `PUT` body. The per-key fields are
 * sent only when changed from `base` (the queue as loaded): GET answers the
 * effective fairness, so sending it unchanged would pin today's default.
 * @returns the body, or field errors keyed like the server's `details[].path`.
 */
export function toSettings(d: Draft, base: Draft = d): { body: QueueSettings } | { errors: Record<string, string> } {
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
  const perKey: QueueSettings = {};
  const changed = (...ks: Exclude<keyof Draft, 'external'>[]) => ks.some((k) => d[k].trim() !== base[k].trim());
  if (changed('keyConcurrency')) {
    const v = optionalInt(d.keyConcurrency, KEY_BOUNDS.concurrency);
    if ('error' in v) errors.keyConcurrency = v.error;
    else perKey.keyConcurrency = v.value;
  }
  if (changed('keyRateMax', 'keyRateDurationMs')) perKey.keyRateLimit = optionalRate('keyRateLimit', d.keyRateMax, d.keyRateDurationMs, errors);
  if (changed('fairness')) perKey.fairness = d.fairness === 'default' ? null : (d.fairness as 'fifo');
  if (changed('agingMs')) {
    const v = optionalInt(d.agingMs, KEY_BOUNDS.agingMs);
    if ('error' in v) errors.agingMs = v.error;
    else perKey.agingMs = v.value;
  }
  if (Object.keys(errors).length) return { errors };
  return {
    body: {
      maxConcurrency,
      rateLimit,
      defaults: { maxAttempts, timeoutMs, backoff: { type: d.backoffType as 'fixed', delayMs, maxDelayMs, jitter: d.jitter as 'none' } },
      external: d.external,
      ...perKey,
    },
  };
}

/** The queue's settings, editable (operators): checked here, then by the server; a 400's `details` land on their fields. */
export function QueueSettingsForm({ queue, canEdit, save }: { queue: Queue; canEdit: boolean; save: (s: QueueSettings) => Promise<Queue> }) {
  const [base, setBase] = useState<Draft>(() => draftOf(queue));
  const [d, setD] = useState<Draft>(base);
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
        const r = toSettings(d, base);
        setOutcome(null);
        if ('errors' in r) return setErrors(r.errors);
        setErrors({});
        setBusy(true);
        save(r.body)
          .then((q) => {
            setBase(draftOf(q));
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
      <h3>Per concurrency key</h3>
      {field('keyConcurrency', 'keyConcurrency', 'Per-key concurrency', 'no limit')}
      {field('keyRateMax', 'keyRateLimit.max', 'Per-key rate limit: starts', 'no limit')}
      {field('keyRateDurationMs', 'keyRateLimit.durationMs', 'Per-key rate limit: per (ms)', 'no limit')}
      <div className="field">
        <label htmlFor="f-fairness">Fairness</label>
        <select id="f-fairness" value={d.fairness} disabled={!canEdit} aria-describedby="h-fairness" onChange={(e) => setD({ ...d, fairness: e.target.value })}>
          {FAIRNESS.map((f) => (
            <option key={f} value={f}>
              {f}
            </option>
          ))}
        </select>
        <span id="h-fairness" className="muted hint">
          round_robin: claims rotate over keys; default: fifo until the queue has keyed jobs
        </span>
      </div>
      {field('agingMs', 'agingMs', 'Aging: +1 priority per (ms)', 'no aging')}
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
