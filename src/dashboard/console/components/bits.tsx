import type { ReactNode } from 'react';
import { describeError } from './ActionButton';
import type { JobStatus } from '../api/types';

/** A job status as a word with a tinted badge (the word carries the meaning; colour only helps). */
export function StatusBadge({ status }: { status: JobStatus | string }) {
  return <span className={`badge s-${status}`}>{status}</span>;
}

/** "3 min ago", with the exact UTC time in a tooltip and for screen readers via <time>. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">—</span>;
  return (
    <time dateTime={at} title={at}>
      {ago(Date.parse(at))}
    </time>
  );
}

/** Relative time of an epoch ms from now: "12 s ago", "in 3 min". */
export function ago(ms: number, now = Date.now()): string {
  const d = Math.round((now - ms) / 1000);
  const a = Math.abs(d);
  const s = a < 60 ? `${a} s` : a < 3600 ? `${Math.round(a / 60)} min` : a < 86400 ? `${Math.round(a / 3600)} h` : `${Math.round(a / 86400)} d`;
  return d >= 0 ? `${s} ago` : `in ${s}`;
}

/** A duration in ms as "850 ms", "12.3 s", "4 min". */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** A query's state: a loading line, or its error (the envelope's code and message). */
export function QueryState({ q, what }: { q: { isPending: boolean; error: unknown }; what: string }) {
  if (q.error) return <p className="err" role="alert">Could not load {what}: {describeError(q.error)}</p>;
  if (q.isPending) return <p className="muted" aria-live="polite">Loading {what}…</p>;
  return null;
}

/** A titled block of a view. */
export function Section({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  return (
    <section className="card" aria-label={title}>
      <div className="card-head">
        <h2>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}
