import { useState } from 'react';
import { ApiError } from '../api/client';
import { ConfirmDialog } from './ConfirmDialog';

/** What an action said: shown next to its button, announced to screen readers. */
export type Outcome = { ok: boolean; text: string } | null;

/** "409 conflict: job is completed" — the envelope's code and message, as text. */
export function describeError(e: unknown): string {
  if (e instanceof ApiError) return e.status === 0 ? e.message : `${e.status} ${e.code}: ${e.message}`;
  return (e as Error)?.message ?? String(e);
}

/**
 * A button for one server action. `confirm` (for destructive actions) asks
 * first; the outcome (the `run` promise's message, or the error envelope) stays
 * visible next to the button in a live region.
 */
export function ActionButton({ label, run, confirm, danger, disabled }: { label: string; run: () => Promise<string>; confirm?: string; danger?: boolean; disabled?: boolean }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const go = async () => {
    setAsking(false);
    setBusy(true);
    setOutcome(null);
    try {
      setOutcome({ ok: true, text: await run() });
    } catch (e) {
      setOutcome({ ok: false, text: describeError(e) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <span className="action">
      <button type="button" className={danger ? 'danger' : undefined} disabled={disabled || busy} aria-busy={busy} onClick={() => (confirm ? setAsking(true) : void go())}>
        {busy ? `${label}…` : label}
      </button>
      <span role="status" className={outcome ? (outcome.ok ? 'ok' : 'err') : undefined}>
        {outcome?.text}
      </span>
      {asking && (
        <ConfirmDialog title={`${label}?`} confirmLabel={label} onConfirm={() => void go()} onCancel={() => setAsking(false)}>
          <p>{confirm}</p>
        </ConfirmDialog>
      )}
    </span>
  );
}
