import { useEffect, useState } from 'react';
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { ApiError } from '../api/client';
import { useLive } from '../hooks/live';
import { useLogout, useSession } from '../hooks/session';
import { ago } from './bits';
import { ProjectSwitcher } from './ProjectSwitcher';

type Theme = 'light' | 'dark';
const THEME_KEY = 'sluice.theme';

/** The colour scheme: the operator's choice if made, else the system's (prefers-color-scheme). */
export function useTheme(): [Theme, () => void] {
  const system = (): Theme => (typeof matchMedia !== 'undefined' && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  const [theme, setTheme] = useState<Theme>(() => (localStorage.getItem(THEME_KEY) as Theme | null) ?? system());
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  return [
    theme,
    () =>
      setTheme((t) => {
        const n = t === 'dark' ? 'light' : 'dark';
        localStorage.setItem(THEME_KEY, n);
        return n;
      }),
  ];
}

/** Live / polling / offline, and how old the newest data is (ticks every second). */
export function ConnectionIndicator() {
  const { mode, lastOkAt, pollMs } = useLive();
  const [, tick] = useState(0);
  useEffect(() => {
    const t = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(t);
  }, []);
  const label = mode === 'live' ? 'Live' : mode === 'polling' ? `Polling every ${pollMs / 1000} s` : 'Offline';
  const stale = lastOkAt !== null && Date.now() - lastOkAt > 3 * pollMs;
  return (
    <span className={`conn conn-${mode}${stale ? ' conn-stale' : ''}`} role="status" aria-live="polite">
      <span aria-hidden="true">●</span> {label}
      {lastOkAt !== null && <span className="muted"> · updated {ago(lastOkAt)}</span>}
    </span>
  );
}

const NAV = [
  ['/', 'Overview'],
  ['/jobs', 'Jobs'],
  ['/dlq', 'Dead letters'],
  ['/workers', 'Workers'],
  ['/schedules', 'Schedules'],
] as const;

/**
 * The frame of every view: skip link, navigation, who is signed in (and the
 * role), logout, connection state, theme toggle. Without a session (401) it
 * sends the operator to /ui/login and back afterwards; with AUTH=off the server
 * answers as the anonymous admin and no login is asked.
 */
export function Shell() {
  const session = useSession();
  const logout = useLogout();
  const navigate = useNavigate();
  const location = useLocation();
  const [theme, toggleTheme] = useTheme();
  if (session.error instanceof ApiError && session.error.status === 401) {
    return <Navigate to="/login" replace state={{ from: location.pathname + location.search }} />;
  }
  const s = session.data;
  // The members page of the current project's organization when the user manages it, else of the first it manages.
  const managed = (session.data?.orgs ?? []).filter((o) => o.orgRole === 'owner' || o.orgRole === 'admin').map((o) => o.name);
  const membersOrg = s && managed.includes(s.org) ? s.org : managed[0];
  const who = s ? (s.user ? s.user.username : s.kind === 'anonymous' ? 'anonymous' : `key ${s.keyId ?? ''}`) : '…';
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <div className="brand">Sluice</div>
        <nav aria-label="Views">
          <ul>
            {NAV.map(([to, label]) => (
              <li key={to}>
                <NavLink to={to} end={to === '/'}>
                  {label}
                </NavLink>
              </li>
            ))}
            {membersOrg && (
              <li>
                <NavLink to={`/orgs/${membersOrg}/members`}>Members</NavLink>
              </li>
            )}
          </ul>
        </nav>
        <div className="who">
          <ConnectionIndicator />
          {s && <ProjectSwitcher session={s} />}
          <span>
            {who}
            {s?.role && <span className="muted"> ({s.role}{s.project !== 'default' && s.kind !== 'user' ? ` · ${s.project}` : ''})</span>}
          </span>
          {s?.kind === 'user' && (
            <button type="button" onClick={() => logout.mutate(undefined, { onSuccess: () => navigate('/login') })}>
              Log out
            </button>
          )}
          <button type="button" onClick={toggleTheme} aria-pressed={theme === 'dark'}>
            {theme === 'dark' ? 'Light mode' : 'Dark mode'}
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {session.error && !(session.error instanceof ApiError && session.error.status === 401) ? (
          <p className="err" role="alert">
            The server could not say who you are: {(session.error as Error).message}
          </p>
        ) : null}
        <Outlet />
      </main>
    </>
  );
}
