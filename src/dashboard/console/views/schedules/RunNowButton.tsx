import { Link } from 'react-router';
import type { Job } from '../../api/types';
import { describeError } from '../../components/ActionButton';

/**
 * "Run now" of one schedule (operators only; the view leaves it out for
 * viewers). Stateless: the outcome comes from the view's `run` mutation (the
 * table re-creates its cells on every render, so state kept here would be
 * lost). Shows a link to the new job (`/ui/jobs/:id`), or the error envelope,
 * in a live region next to the button.
 */
export function RunNowButton({ onRun, busy, job, error }: { onRun: () => void; busy: boolean; job?: Job; error?: unknown }) {
  return (
    <span className="action">
      <button type="button" disabled={busy} aria-busy={busy} onClick={onRun}>
        {busy ? 'Run now…' : 'Run now'}
      </button>
      <span role="status" className={job ? 'ok' : error ? 'err' : undefined}>
        {job && (
          <>
            enqueued{' '}
            <Link className="mono" to={`/jobs/${job.id}`} title={job.id}>
              {job.id.slice(-12)}
            </Link>
          </>
        )}
        {!job && error ? describeError(error) : null}
      </span>
    </span>
  );
}
