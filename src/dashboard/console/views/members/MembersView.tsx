import { useState } from 'react';
import { useParams } from 'react-router';
import { describeError } from '../../components/ActionButton';
import { useMemberActions, useMembers } from '../../hooks/orgs';
import { useSession } from '../../hooks/session';
import { ORG_ROLES, type CreatedMember, type OrgRole } from '../../api/types';
import { chosenRoles, MemberCard, ProjectRoles, type RoleChoice } from './MemberCard';

/**
 * `/ui/orgs/:org/members` (API.md v1.3): an organization's members for its
 * owners and admins — invite (an existing user joins at once; a new one gets
 * a one-time link, shown once), change roles per project and hidePayloads,
 * remove. The projects offered are the organization's as the session lists them.
 */
export function MembersView() {
  const org = useParams().org as string;
  const session = useSession().data;
  const members = useMembers(org);
  const act = useMemberActions(org);
  const projects = (session?.projects ?? []).filter((p) => p.org === org).map((p) => p.name);
  return (
    <section aria-labelledby="members-h">
      <h1 id="members-h">Members of {org}</h1>
      <InviteForm projects={projects} add={act.add} />
      {members.error ? (
        <p className="err" role="alert">
          {describeError(members.error)}
        </p>
      ) : members.data ? (
        <ul className="groups" aria-label="Members">
          {members.data.map((m) => (
            <MemberCard
              key={m.id}
              member={m}
              projects={projects}
              onSave={(change) => act.update.mutateAsync({ username: m.username, change })}
              onRemove={() => act.remove.mutateAsync(m.username)}
            />
          ))}
        </ul>
      ) : (
        <p className="muted">Loading…</p>
      )}
    </section>
  );
}

function InviteForm({ projects, add }: { projects: string[]; add: ReturnType<typeof useMemberActions>['add'] }) {
  const [username, setUsername] = useState('');
  const [orgRole, setOrgRole] = useState<OrgRole>('member');
  const [hide, setHide] = useState(false);
  const [roles, setRoles] = useState<RoleChoice>({});
  const [created, setCreated] = useState<CreatedMember | null>(null);
  const fields = add.error && 'fieldErrors' in add.error ? (add.error as { fieldErrors(): Record<string, string> }).fieldErrors() : {};
  return (
    <form
      className="card"
      aria-label="Invite a member"
      onSubmit={(e) => {
        e.preventDefault();
        setCreated(null);
        add.mutate({ username, orgRole, hidePayloads: hide, projects: chosenRoles(roles) }, { onSuccess: (m) => (setCreated(m), setUsername('')) });
      }}
    >
      <h2>Invite</h2>
      <div className="settings">
        <div className="field">
          <label htmlFor="inv-user">Username</label>
          <input id="inv-user" required value={username} onChange={(e) => setUsername(e.target.value)} aria-describedby="inv-user-err" />
          <span id="inv-user-err" className="err">
            {fields.username}
          </span>
        </div>
        <div className="field">
          <label htmlFor="inv-role">Organization role</label>
          <select id="inv-role" value={orgRole} onChange={(e) => setOrgRole(e.target.value as OrgRole)}>
            {ORG_ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </div>
        <div className="field check">
          <input id="inv-hide" type="checkbox" checked={hide} onChange={(e) => setHide(e.target.checked)} />
          <label htmlFor="inv-hide">Hide payloads</label>
        </div>
      </div>
      <ProjectRoles idPrefix="inv-p" projects={projects} value={roles} onChange={setRoles} />
      <button type="submit" disabled={add.isPending}>
        {add.isPending ? 'Inviting…' : 'Invite'}
      </button>
      {add.error && (
        <p className="err" role="alert">
          {describeError(add.error)}
        </p>
      )}
      {created && (
        <div role="status" className="ok">
          {created.inviteToken ? (
            <p>
              {created.username} is invited. Send this link (shown once, valid 7 days, usable once): <code data-testid="invite-link">{`${location.origin}/ui/invite#token=${created.inviteToken}`}</code>
            </p>
          ) : (
            <p>{created.username} already had an account and is now a member.</p>
          )}
        </div>
      )}
    </form>
  );
}
