import { useState } from 'react';
import { Link } from 'react-router';
import { describeError } from '../../components/ActionButton';
import { useAcceptInvite } from '../../hooks/orgs';
import { ApiError } from '../../api/client';

/** The token of an invitation link: `/ui/invite#token=…` (in the fragment: never sent to a server or a Referer), or `?token=`. */
function tokenOfLocation(): string {
  const h = new URLSearchParams(location.hash.replace(/^#/, '')).get('token');
  return h ?? new URLSearchParams(location.search).get('token') ?? '';
}

/**
 * `/ui/invite` (API.md v1.3): an invited user sets a password
 * (`POST /auth/accept-invite`, the server's password rules), then logs in.
 */
export function InviteView() {
  const accept = useAcceptInvite();
  const [token] = useState(tokenOfLocation);
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const mismatch = again !== '' && again !== password;
  return (
    <main id="main" className="login">
      <h1>Accept your invitation</h1>
      {accept.isSuccess ? (
        <p role="status">
          Your password is set. <Link to="/login">Log in</Link>
        </p>
      ) : (
        <form
          aria-label="Set your password"
          onSubmit={(e) => {
            e.preventDefault();
            if (!mismatch) accept.mutate({ token, password });
          }}
        >
          {!token && (
            <p className="err" role="alert">
              This link has no invitation token: open the link you were sent.
            </p>
          )}
          <label htmlFor="np">New password</label>
          <input id="np" type="password" autoComplete="new-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
          <span className="muted">At least 12 characters.</span>
          <label htmlFor="np2">Repeat it</label>
          <input id="np2" type="password" autoComplete="new-password" required value={again} onChange={(e) => setAgain(e.target.value)} aria-invalid={mismatch} />
          {mismatch && <span className="err">The two passwords differ.</span>}
          <button type="submit" disabled={accept.isPending || !token || mismatch}>
            {accept.isPending ? 'Saving…' : 'Set password'}
          </button>
          {accept.error && (
            <p className="err" role="alert">
              {accept.error instanceof ApiError && accept.error.details.length
                ? accept.error.details.map((d) => `${d.path === 'token' ? 'This invitation' : 'The password'}: ${d.message}`).join('; ')
                : describeError(accept.error)}
            </p>
          )}
        </form>
      )}
    </main>
  );
}
