import { useState } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { describeError } from '../../components/ActionButton';
import { useLogin } from '../../hooks/session';

/** `/ui/login`: username and password → `POST /auth/login` (sets the session cookie), then back where the operator was. */
export function LoginView() {
  const login = useLogin();
  const navigate = useNavigate();
  const from = (useLocation().state as { from?: string } | null)?.from ?? '/';
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  return (
    <main id="main" className="login">
      <h1>Sluice console</h1>
      <form
        aria-label="Log in"
        onSubmit={(e) => {
          e.preventDefault();
          login.mutate({ username, password }, { onSuccess: () => navigate(from, { replace: true }) });
        }}
      >
        <label htmlFor="u">Username</label>
        <input id="u" name="username" autoComplete="username" required value={username} onChange={(e) => setUsername(e.target.value)} />
        <label htmlFor="p">Password</label>
        <input id="p" name="password" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        <button type="submit" disabled={login.isPending}>
          {login.isPending ? 'Logging in…' : 'Log in'}
        </button>
        {login.error && (
          <p className="err" role="alert">
            {describeError(login.error)}
          </p>
        )}
      </form>
    </main>
  );
}
