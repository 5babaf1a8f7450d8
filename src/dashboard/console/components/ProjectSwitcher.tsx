import { useNavigate } from 'react-router';
import { useSwitchProject } from '../hooks/orgs';
import type { Session } from '../api/types';
import { describeError } from './ActionButton';

/**
 * The header's project switcher (API.md v1.3): the signed-in user's projects
 * only (`GET /auth/session` lists them, grouped by organization), with the
 * role in each; choosing one is `POST /auth/project`, then every view reloads
 * in the new project (the cache is dropped) from the overview.
 */
export function ProjectSwitcher({ session }: { session: Session }) {
  const sw = useSwitchProject();
  const navigate = useNavigate();
  const projects = session.projects ?? [];
  if (session.kind !== 'user' || projects.length === 0) return null;
  const orgs = [...new Set(projects.map((p) => p.org))];
  return (
    <span className="switcher">
      <label htmlFor="project-switcher" className="muted">
        Project
      </label>{' '}
      <select
        id="project-switcher"
        value={session.project}
        disabled={sw.isPending}
        onChange={(e) => sw.mutate(e.target.value, { onSuccess: () => navigate('/') })}
      >
        {orgs.map((org) => (
          <optgroup key={org} label={`Organization ${org}`}>
            {projects
              .filter((p) => p.org === org)
              .map((p) => (
                <option key={p.name} value={p.name}>
                  {p.name} ({p.role})
                </option>
              ))}
          </optgroup>
        ))}
      </select>
      {sw.error && (
        <span className="err" role="alert">
          {' '}
          {describeError(sw.error)}
        </span>
      )}
    </span>
  );
}
