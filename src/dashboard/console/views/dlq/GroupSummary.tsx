import type { DlqGroup } from '../../api/types';
import { ActionButton } from '../../components/ActionButton';
import { Time } from '../../components/bits';

type Summary = DlqGroup['summary'];

/**
 * Failures per hour over the last 24 h (oldest left, the hour ending now right) as bars;
 * the numbers are in the label and each bar's title, so the chart is readable without the picture.
 */
export function HourlyBars({ hourly }: { hourly: number[] }) {
  const max = Math.max(1, ...hourly);
  const total = hourly.reduce((a, b) => a + b, 0);
  return (
    <div className="hourly" role="img" aria-label={`Failures per hour over the last 24 h, oldest first: ${hourly.join(', ')} (${total} in all)`}>
      {hourly.map((n, i) => (
        <span key={i} className="hourly-bar" title={`${24 - i} h to ${23 - i} h ago: ${n}`} style={{ height: `${n ? Math.max(8, Math.round((n / max) * 100)) : 2}%` }} />
      ))}
    </div>
  );
}

/**
 * A dead-letter group's failure summary (API.md v1.3): the rules' or the model's text — always as
 * text, never as HTML (React escapes it; a model's or an error's markup stays visible as characters),
 * which kind, which model and when, the next step, the hourly bars, what the failures share, and for
 * operators "Summarize again" (`POST /jobs/dlq/groups/:fingerprint/summary`).
 */
export function GroupSummary({ fingerprint, summary, canOperate, summarizeAgain }: { fingerprint: string; summary: Summary; canOperate: boolean; summarizeAgain: (fingerprint: string) => Promise<{ queued: boolean }> }) {
  const model = summary.kind === 'model';
  return (
    <div className="summary" aria-label="Failure summary">
      <p className="summary-kind muted">
        {model ? (
          <>
            <span className="badge">model</span> {summary.model} · written <Time at={summary.generatedAt} /> at {summary.summarizedCount} failures
          </>
        ) : (
          <>
            <span className="badge">rules</span> from the history, as of now
          </>
        )}
      </p>
      <p className="summary-text">{summary.text}</p>
      {model && summary.nextStep ? <p className="summary-next"><strong>Next step:</strong> {summary.nextStep}</p> : null}
      {model && summary.rulesText ? <p className="summary-rules muted">{summary.rulesText}</p> : null}
      <HourlyBars hourly={summary.hourly} />
      <p className="muted summary-facts">
        {summary.workers.length > 0 && <>workers {summary.workers.join(', ')} · </>}
        attempts {summary.attempts.join(', ') || '—'}
        {summary.payloadKeys.length > 0 && <> · payload keys {summary.payloadKeys.join(', ')}</>}
        {summary.newPayloadKeys.length > 0 && <> (new: {summary.newPayloadKeys.join(', ')})</>}
      </p>
      {canOperate && (
        <ActionButton
          label="Summarize again"
          run={async () => ((await summarizeAgain(fingerprint)).queued ? 'asked: the model writes it at the next pass' : 'no model is configured: the rules summary is current')}
        />
      )}
    </div>
  );
}
